-- rules/10-mail-contacts.lua: mail only my contacts, with links only to my
-- own hosts; calendar invitations only to my contacts.
-- The mail service takes the recipients in the URL: POST
-- http://mail.localhost:PORT/send?to=ADDRESS&subject=... with the message
-- as the body; the calendar: POST http://calendar.localhost:PORT/create?
-- title=...&day=...&participants=A,B.  With issue 17's argument provenance
-- (call.untrusted_args) a URL found only in untrusted text is refused too.
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
local c = call
if type(c) == "table" and type(c.untrusted_args) == "table" then
	for _, name in ipairs(c.untrusted_args) do
		if name == "url" then
			return false
		end
	end
end
local path, query = url:match("^https?://[^/]+(/[^?#]*)%??([^#]*)$")
if not path then
	return false
end
if target == "calendar.localhost" then
	if path ~= "/create" then
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
