-- Health of tke-extend's CLBPortPool, served by the provider: its status
-- shows the PortPool it becomes. Active is Healthy; Pending with reason
-- Failed (the pool cannot be made, or the PortPool reports an error) is
-- Degraded, other Pending (waiting for the PortPool) Progressing;
-- Deleting waits for the PortPool's listeners to go.
local meta = obj.metadata or {}
local status = obj.status or {}
if meta.deletionTimestamp ~= nil or status.state == "Deleting" then
  return {status = "Progressing", message = status.message or "Deleting the pool's PortPool"}
end
if status.state == nil then
  return {status = "Progressing", message = "Waiting for the provider to make the pool's PortPool"}
end
if status.observedGeneration ~= nil and meta.generation ~= nil and status.observedGeneration < meta.generation then
  return {status = "Progressing", message = "The provider has not seen generation " .. meta.generation .. " yet"}
end
if status.state == "Active" then
  local n = 0
  for _ in ipairs(status.loadbalancerStatuses or {}) do n = n + 1 end
  return {status = "Healthy", message = "PortPool " .. (status.portPool or "") .. " Ready, " .. n .. " load balancers"}
end
if status.reason == "Failed" then
  return {status = "Degraded", message = status.message or "The pool's PortPool cannot be made"}
end
return {status = "Progressing", message = status.message or "Waiting for the pool's PortPool"}
