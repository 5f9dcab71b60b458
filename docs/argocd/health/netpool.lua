-- Health of a NetPool: its Synced and Ready conditions. Synced=False is a
-- call the provider could not make (the message is the error, such as a
-- NetIP delete its RBAC refuses); Ready=False with IPConflict is an IP
-- already in another pool, a spec to fix. A deletion waits while IPs are
-- Active, which ends as their containers are released. A full pool stays
-- Healthy: the CNI's calls fail, not the pool.
local meta = obj.metadata or {}
local status = obj.status or {}
local ready, synced
for _, c in ipairs(status.conditions or {}) do
  if c.type == "Ready" then ready = c end
  if c.type == "Synced" then synced = c end
end
if synced ~= nil and synced.status == "False" then
  return {status = "Degraded", message = synced.message or synced.reason}
end
if meta.deletionTimestamp ~= nil then
  if ready ~= nil and ready.reason == "DeletionBlocked" then
    return {status = "Progressing", message = ready.message}
  end
  return {status = "Progressing", message = "Deleting the pool's NetIPs"}
end
if ready == nil then
  return {status = "Progressing", message = "Waiting for the provider to create the pool's NetIPs"}
end
if ready.observedGeneration ~= nil and meta.generation ~= nil and ready.observedGeneration < meta.generation then
  return {status = "Progressing", message = "The provider has not seen generation " .. meta.generation .. " yet"}
end
if ready.status == "True" then
  return {status = "Healthy", message = (status.available or 0) .. " available, " .. (status.active or 0) .. " active, " .. (status.reserved or 0) .. " reserved of " .. (status.total or 0)}
end
return {status = "Degraded", message = ready.message or ready.reason}
