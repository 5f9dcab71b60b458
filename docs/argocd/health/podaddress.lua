-- Health of a PodAddress (one Pod's public addresses), from its state.
local meta = obj.metadata or {}
local status = obj.status or {}
local state = status.state or ""
local message = status.message
if meta.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Deregistering the Pod's targets"}
end
if state == "Bound" then
  local addrs = {}
  for _, b in ipairs(status.bindings or {}) do
    table.insert(addrs, (b.protocol or "") .. "/" .. (b.containerPort or "") .. " " .. (b.address or ""))
  end
  return {status = "Healthy", message = table.concat(addrs, ", ")}
end
if state == "Held" then
  return {status = "Suspended", message = message or "The Pod is gone; its ports are held for a Pod of the same name"}
end
if state == "Isolated" then
  return {status = "Suspended", message = message or "Out of service by request; the ports and addresses are kept"}
end
if state == "NoPortAvailable" or state == "PoolNotFound" or state == "Invalid" then
  return {status = "Degraded", message = state .. ": " .. (message or "")}
end
if state == "" then
  return {status = "Progressing", message = "Waiting for the provider to allocate ports"}
end
return {status = "Progressing", message = state .. ": " .. (message or "")}
