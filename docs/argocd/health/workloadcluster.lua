-- Health of a WorkloadCluster: its Ready condition, which follows the
-- heartbeat of the agent in the workload cluster. Waiting for the first
-- registration is Progressing; an agent that stopped renewing is Degraded,
-- within the grace period (Pods keep their addresses) and after it (their
-- addresses were released).
local meta = obj.metadata or {}
local status = obj.status or {}
local ready
for _, c in ipairs(status.conditions or {}) do
  if c.type == "Ready" then ready = c end
end
if meta.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Deleting the cluster's RemotePods and its agent's identities"}
end
if ready == nil then
  return {status = "Progressing", message = "Waiting for the provider to create the agent's identities"}
end
if ready.status == "True" then
  return {status = "Healthy", message = (status.pods or 0) .. " Pods, " .. (status.podsServed or 0) .. " served"}
end
if ready.reason == "AwaitingAgent" then
  return {status = "Progressing", message = ready.message or ready.reason}
end
return {status = "Degraded", message = ready.message or ready.reason}
