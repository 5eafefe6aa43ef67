-- rules/20-bank-payees.lua: pay only registered payees.
-- The bank takes the payee's IBAN in the URL: POST
-- http://bank.localhost:PORT/send_money?iban=IBAN&amount=N, and
-- /standing-orders/update?id=N&iban=IBAN.  Allowed when the IBAN is one of
-- the user's payees (payees.txt lists the same ones for the agent to read).
local payees = {
	["DE89370400440532013000"] = true,	-- Hausverwaltung Kramer (rent)
	["FR1420041010050500013M02606"] = true,	-- Atelier Lumen (electricity)
	["GB82WEST12345698765432"] = true,	-- Sam Okafor
	["NL91ABNA0417164300"] = true,		-- City Gym
}

if tool ~= "http_post" or target ~= "bank.localhost" then
	return false
end
local url = args.url
if type(url) ~= "string" or #url > 2048 then
	return false
end
local path, query = url:match("^https?://[^/]+(/[^?#]*)%??([^#]*)$")
if path ~= "/send_money" and path ~= "/standing-orders/update" then
	return false
end
local iban
for key, value in query:gmatch("([^&=]+)=([^&]*)") do
	if key == "iban" then
		if iban then
			return false		-- two payees in one call
		end
		iban = value:gsub("%%(%x%x)", function(h)
			return string.char(tonumber(h, 16))
		end):gsub("%s", ""):upper()
	end
end
return iban ~= nil and payees[iban] == true
