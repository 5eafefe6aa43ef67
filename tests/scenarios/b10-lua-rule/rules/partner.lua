-- allow posting to the partner API
return tool == "http_post" and target == "api.partner.invalid"
