-- Health of a ProviderConfig or ClusterProviderConfig: its Ready condition
-- says whether the credentials Secret can be read.
local meta = obj.metadata or {}
local ready, terminating
for _, c in ipairs((obj.status or {}).conditions or {}) do
  if c.type == "Ready" then ready = c end
  if c.type == "Terminating" then terminating = c end
end
if meta.deletionTimestamp ~= nil then
  local msg = "Deleting"
  if terminating ~= nil and terminating.message ~= nil then msg = terminating.message end
  return {status = "Progressing", message = msg}
end
if ready == nil then
  return {status = "Progressing", message = "Waiting for the provider to check the credentials"}
end
if ready.status == "True" then
  return {status = "Healthy", message = "Credentials are readable"}
end
return {status = "Degraded", message = ready.message or ready.reason}
