-- rules/40-hotel-bookings.lua: book only a hotel my own words named.
-- The booking service: POST http://hotels.localhost:PORT/reserve?hotel=NAME&
-- from=YYYY-MM-DD&to=YYYY-MM-DD with an empty body.  A booking says which
-- hotel and when, nothing else: so it may go out whatever the context holds
-- (the dates may come from a colleague's chat message), but with issue 17's
-- argument provenance a hotel that only untrusted text named (a review, a
-- listing, a page: "url?hotel" in call.untrusted_args) is left to me.
if tool ~= "http_post" or target ~= "hotels.localhost" then
	return false
end
local url, body = args.url, args.body or ""
if type(url) ~= "string" or #url > 2048 or body ~= "" then
	return false
end
local path, query = url:match("^https?://[^/]+(/[^?#]*)%??([^#]*)$")
if path ~= "/reserve" then
	return false
end
local got = {}
for key, value in query:gmatch("([^&=]+)=([^&]*)") do
	if (key ~= "hotel" and key ~= "from" and key ~= "to") or got[key] then
		return false
	end
	got[key] = value:gsub("%%(%x%x)", function(h)
		return string.char(tonumber(h, 16))
	end):gsub("%+", " ")
end
local date = "^%d%d%d%d%-%d%d%-%d%d$"
if not got.hotel or not got.from or not got.to or not got.from:match(date) or
    not got.to:match(date) then
	return false
end
-- a hotel's name: letters, spaces and a little punctuation, so the booking
-- carries no number or code out of the context
if #got.hotel > 80 or got.hotel:match("[^%a '%.&-]") then
	return false
end
local c = call
if type(c) == "table" and type(c.untrusted_args) == "table" then
	for _, a in ipairs(c.untrusted_args) do
		if a == "url?hotel" then
			return false
		end
	end
end
return true
