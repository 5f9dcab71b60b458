-- Health of a composite resource (XR) or claim: the Synced and Ready
-- conditions Crossplane core sets. Ready=False means composed resources
-- are still coming up (Progressing); Synced=False means Crossplane cannot
-- compose or apply them (Degraded).
local meta = obj.metadata or {}
local annotations = meta.annotations or {}
local ready, synced
for _, c in ipairs((obj.status or {}).conditions or {}) do
  if c.type == "Ready" then ready = c end
  if c.type == "Synced" then synced = c end
end
if annotations["crossplane.io/paused"] == "true" then
  return {status = "Suspended", message = "Reconciliation is paused (crossplane.io/paused)"}
end
if meta.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Deleting the composed resources"}
end
if synced ~= nil and synced.status == "False" then
  return {status = "Degraded", message = synced.message or synced.reason}
end
if ready == nil then
  return {status = "Progressing", message = "Waiting for Crossplane to compose the resources"}
end
if ready.status == "True" then
  return {status = "Healthy", message = ready.message or "Available"}
end
return {status = "Progressing", message = ready.message or ready.reason}
