-- rules/10-mail-contacts.lua: mail only my contacts, with links only to my
-- own hosts; calendar invitations only to my contacts.
-- The mail service takes the recipients in the URL: POST
-- http://mail.localhost:PORT/send?to=ADDRESS&subject=... with the message
-- as the body; the calendar: POST http://calendar.localhost:PORT/create?
-- title=...&day=...&participants=A,B.
-- Where the recipients came from does not matter: this list is mine, and an
-- address on it is a contact whoever wrote it into the context (a reply to a
-- mail takes the sender's address from the mail).  With issue 17's argument
-- provenance (call.untrusted_args) a message body or an event title that
-- only untrusted text wrote (a mail, a page, a chat message) is refused: my
-- assistant does not pass an outsider's words on in my name.
local contacts = {
	["dana.whitfield@northwind.example"] = true,	-- the user herself
	["priya.shah@northwind.example"] = true,
	["marco.bellini@northwind.example"] = true,
	["lee.parker@northwind.example"] = true,
	["sam.okafor@gmail.example"] = true,
}
local own_hosts = {
	["northwind.example"] = true,
	["wiki.northwind.example"] = true,
}

local function unescape(s)
	return (s:gsub("%%(%x%x)", function(h)
		return string.char(tonumber(h, 16))
	end))
end

-- every address in a comma-separated list is a contact (and there is one)
local function all_contacts(list)
	local seen = false
	for one in unescape(list):lower():gmatch("[^,;]+") do
		one = one:match("^%s*(.-)%s*$")
		if not contacts[one] then
			return false
		end
		seen = true
	end
	return seen
end

local function links_are_mine(text)
	for host in text:lower():gmatch("https?://([a-z0-9.-]+)") do
		if not own_hosts[host] then
			return false
		end
	end
	for host in text:lower():gmatch("www%.([a-z0-9.-]+)") do
		if not own_hosts["www." .. host] then
			return false
		end
	end
	return true
end

if tool ~= "http_post" or (target ~= "mail.localhost" and target ~= "calendar.localhost") then
	return false
end
local url, body = args.url, args.body or ""
if type(url) ~= "string" or #url > 2048 or type(body) ~= "string" or #body > 65536 then
	return false
end
-- did NAME (an argument, or "url?KEY" for a query parameter) come only
-- from untrusted text?
local function untrusted(name)
	local c = call
	if type(c) ~= "table" or type(c.untrusted_args) ~= "table" then
		return false
	end
	for _, a in ipairs(c.untrusted_args) do
		if a == name then
			return true
		end
	end
	return false
end

if untrusted("body") then
	return false
end
local path, query = url:match("^https?://[^/]+(/[^?#]*)%??([^#]*)$")
if not path then
	return false
end
if target == "calendar.localhost" then
	if path ~= "/create" or untrusted("url?title") then
		return false
	end
	local who = query:match("participants=([^&]*)")
	return who == nil or who == "" or all_contacts(who)
end
if path ~= "/send" or not links_are_mine(body) then
	return false
end
local seen = false
for key, value in query:gmatch("([^&=]+)=([^&]*)") do
	if key == "to" or key == "cc" or key == "bcc" then
		if not all_contacts(value) then
			return false
		end
		seen = true
	end
end
return seen
