-- rules/10-mail-contacts.lua: mail only my contacts.
-- The mail service takes the recipient in the URL: POST
-- http://mail.localhost:PORT/send?to=ADDRESS&subject=...  A send is allowed
-- when every recipient is a contact, whatever the context holds; with
-- issue 17's argument provenance it also needs the URL (the recipient) not
-- to come from untrusted text alone.
local contacts = {
	["dana.whitfield@northwind.example"] = true,	-- the user herself
	["priya.shah@northwind.example"] = true,
	["marco.bellini@northwind.example"] = true,
	["lee.parker@northwind.example"] = true,
	["sam.okafor@gmail.example"] = true,
}

if tool ~= "http_post" or target ~= "mail.localhost" then
	return false
end
local url = args.url
if type(url) ~= "string" or #url > 2048 then
	return false
end
local path, query = url:match("^https?://[^/]+(/[^?#]*)%??([^#]*)$")
if path ~= "/send" then
	return false
end
local c = rawget(_ENV, "call")
if c and c.untrusted_args then
	for _, name in ipairs(c.untrusted_args) do
		if name == "url" then
			return false
		end
	end
end
local seen = false
for key, value in query:gmatch("([^&=]+)=([^&]*)") do
	if key == "to" or key == "cc" or key == "bcc" then
		local v = value:gsub("%%(%x%x)", function(h)
			return string.char(tonumber(h, 16))
		end):lower()
		for one in v:gmatch("[^,;]+") do
			one = one:match("^%s*(.-)%s*$")
			if not contacts[one] then
				return false
			end
			seen = true
		end
	end
end
return seen
