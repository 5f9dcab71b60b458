-- Health of a PodAddressPolicy: Healthy when every Pod it serves is Bound,
-- Degraded when some cannot bind as things stand (no free port, a missing
-- pool, an invalid request), Progressing while they are being bound.
local meta = obj.metadata or {}
local status = obj.status or {}
local ready
for _, c in ipairs(status.conditions or {}) do
  if c.type == "Ready" then ready = c end
end
if ready == nil then
  return {status = "Progressing", message = "Waiting for the provider to count the policy's Pods"}
end
if ready.observedGeneration ~= nil and meta.generation ~= nil and ready.observedGeneration < meta.generation then
  return {status = "Progressing", message = "The provider has not seen generation " .. meta.generation .. " yet"}
end
if ready.status == "True" then
  return {status = "Healthy", message = ready.message}
end
if ready.reason == "BindFailed" then
  return {status = "Degraded", message = ready.message}
end
return {status = "Progressing", message = ready.message}
