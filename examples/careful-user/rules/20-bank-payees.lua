-- rules/20-bank-payees.lua: pay only registered payees, by the bank's API
-- or by the standing-order file the bank imports.
-- The bank takes the payee's IBAN in the URL: POST
-- http://bank.localhost:PORT/send_money?iban=IBAN&amount=N, and
-- /standing-orders/update?id=N&iban=IBAN.  Allowed when the IBAN is one of
-- the user's payees (payees.txt lists the same ones for the agent to read).
-- standing-orders.csv (id,name,IBAN,amount,period; protected in policy.toml)
-- may gain orders to registered payees (edit_file keeping every line it had);
-- changing or removing an order is left to me.
local payees = {
	["DE89370400440532013000"] = true,	-- Hausverwaltung Kramer (rent)
	["FR1420041010050500013M02606"] = true,	-- Atelier Lumen (electricity)
	["GB82WEST12345698765432"] = true,	-- Sam Okafor
	["NL91ABNA0417164300"] = true,		-- City Gym
}

-- a CSV line's fields (no quoting in this file)
local function fields(line)
	local f, i = {}, 1
	while #f < 16 do
		local j = line:find(",", i, true)
		f[#f + 1] = line:sub(i, (j or #line + 1) - 1)
		if not j then
			break
		end
		i = j + 1
	end
	return f
end

-- an edit of the standing-order file that only adds orders to payees: it
-- keeps the whole lines it replaces (OLD ends a line) and appends new ones
local function adds_payee_orders(old, new)
	if type(old) ~= "string" or type(new) ~= "string" or old == "" or #new > 65536 or
	    old:sub(-1) ~= "\n" or new:sub(1, #old) ~= old then
		return false
	end
	local rest, n, i = new:sub(#old + 1), 0, 1
	while i <= #rest do
		local j = rest:find("\n", i, true) or #rest + 1
		local f = fields(rest:sub(i, j - 1))
		if #f ~= 5 or not f[1]:match("^%d+$") or not payees[f[3]:upper()] or
		    not f[4]:match("^%d+%.?%d*$") or not f[5]:match("^%a+$") then
			return false
		end
		n, i = n + 1, j + 1
	end
	return n > 0
end

if tool == "edit_file" and args.path == "standing-orders.csv" then
	return adds_payee_orders(args.old_str, args.new_str)
end
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
