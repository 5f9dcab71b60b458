-- Health of a PodAddress (one Pod's public addresses), from its state.
local meta = obj.metadata or {}
local status = obj.status or {}
local state = status.state or ""
local message = status.message
if meta.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Deregistering the Pod's targets"}
end
local eip = status.eip
if state == "Bound" and eip ~= nil and eip.state ~= "Fallback" then
  return {status = "Healthy", message = "EIP " .. (eip.publicIp or "") .. " (" .. (eip.addressId or "") .. ")"}
end
if state == "Bound" or state == "FallbackPort" then
  local addrs = {}
  for _, b in ipairs(status.bindings or {}) do
    table.insert(addrs, (b.protocol or "") .. "/" .. (b.containerPort or "") .. " " .. (b.address or ""))
  end
  local text = table.concat(addrs, ", ")
  if state == "FallbackPort" then
    text = (message or "no EIP") .. ": " .. text
  end
  return {status = "Healthy", message = text}
end
if state == "Held" then
  return {status = "Suspended", message = message or "The Pod is gone; its addresses are held for a Pod of the same name"}
end
if state == "Isolated" then
  return {status = "Suspended", message = message or "Out of service by request; the ports and addresses are kept"}
end
if state == "NoPortAvailable" or state == "PoolNotFound" or state == "PoolNotAllowed" or state == "Invalid" or state == "QuotaExceeded" or state == "NotGranted" then
  return {status = "Degraded", message = state .. ": " .. (message or "")}
end
if state == "" then
  return {status = "Progressing", message = "Waiting for the provider to allocate ports"}
end
return {status = "Progressing", message = state .. ": " .. (message or "")}
