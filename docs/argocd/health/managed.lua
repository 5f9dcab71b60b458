-- Health of a managed resource of provider-tencentcloud-network
-- (LoadBalancer, Listener, Rule, TargetSet), read from the conditions
-- crossplane-runtime and the provider set.
local meta = obj.metadata or {}
local annotations = meta.annotations or {}
local ready, synced
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" then ready = c end
    if c.type == "Synced" then synced = c end
  end
end
if annotations["crossplane.io/paused"] == "true" or (synced ~= nil and synced.reason == "ReconcilePaused") then
  return {status = "Suspended", message = "Reconciliation is paused (crossplane.io/paused)"}
end
if meta.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Deleting the cloud resource"}
end
if synced ~= nil and synced.status == "False" then
  return {status = "Degraded", message = synced.message or synced.reason}
end
if synced ~= nil and synced.observedGeneration ~= nil and meta.generation ~= nil and synced.observedGeneration < meta.generation then
  return {status = "Progressing", message = "The provider has not seen generation " .. meta.generation .. " yet"}
end
if ready == nil then
  return {status = "Progressing", message = "Waiting for the provider to observe the resource"}
end
if ready.status == "True" then
  return {status = "Healthy", message = ready.message or "Available"}
end
if ready.reason == "Creating" or ready.reason == "Deleting" or ready.status == "Unknown" then
  return {status = "Progressing", message = ready.message or ready.reason}
end
return {status = "Degraded", message = ready.message or ready.reason}
