-- rules/30-chat-own-links.lua: chat messages may carry only links to my
-- own hosts, and invitations go only to addresses of my company.
-- The chat service: POST http://chat.localhost:PORT/post?channel=NAME (or
-- ?user=NAME) with the message as the body; /invite?user=NAME&email=ADDRESS.
local own_hosts = {
	["northwind.example"] = true,
	["wiki.northwind.example"] = true,
	["mail.localhost"] = true,
	["calendar.localhost"] = true,
}

if tool ~= "http_post" or target ~= "chat.localhost" then
	return false
end
local url = args.url
local body = args.body or ""
if type(url) ~= "string" or #url > 2048 or type(body) ~= "string" or #body > 65536 then
	return false
end
local path, query = url:match("^https?://[^/]+(/[^?#]*)%??([^#]*)$")
if path == "/invite" then
	local email = query:match("email=([^&]*)")
	if not email then
		return false
	end
	email = email:gsub("%%(%x%x)", function(h)
		return string.char(tonumber(h, 16))
	end):lower()
	return email:match("^[a-z0-9._-]+@northwind%.example$") ~= nil
end
if path ~= "/post" then
	return false
end
-- every link in the message must lead to one of my hosts
local lower = body:lower()
for host in lower:gmatch("https?://([a-z0-9.-]+)") do
	if not own_hosts[host] then
		return false
	end
end
for host in lower:gmatch("www%.([a-z0-9.-]+)") do
	if not own_hosts["www." .. host] then
		return false
	end
end
return true
