-- Health of a PortPool: the managed-resource conditions, then its load
-- balancers: one that is missing makes the pool Degraded, listeners still
-- being created make it Progressing, and so do bindings moving off a
-- load balancer that left the pool or drains. Exhaustion (no free port) is left to
-- the PodAddressPolicy and PodAddress of the Pods that wait.
local meta = obj.metadata or {}
local annotations = meta.annotations or {}
local status = obj.status or {}
local ready, synced
for _, c in ipairs(status.conditions or {}) do
  if c.type == "Ready" then ready = c end
  if c.type == "Synced" then synced = c end
end
if annotations["crossplane.io/paused"] == "true" or (synced ~= nil and synced.reason == "ReconcilePaused") then
  return {status = "Suspended", message = "Reconciliation is paused (crossplane.io/paused)"}
end
if meta.deletionTimestamp ~= nil then
  return {status = "Progressing", message = "Deleting the pool's listeners"}
end
if synced ~= nil and synced.status == "False" then
  return {status = "Degraded", message = synced.message or synced.reason}
end
if ready == nil then
  return {status = "Progressing", message = "Waiting for the provider to observe the pool"}
end
local at = status.atProvider or {}
local creating
for _, lb in ipairs(at.loadBalancers or {}) do
  if creating == nil and (lb.state == "Creating" or (lb.listenersReady or 0) < (lb.listenersWanted or 0)) then
    creating = "Load balancer " .. lb.id .. ": " .. (lb.listenersReady or 0) .. " of " .. (lb.listenersWanted or 0) .. " listeners"
  end
end
if ready.status ~= "True" then
  if ready.reason == "Creating" then
    return {status = "Progressing", message = creating or ready.message or "Creating the pool's load balancers"}
  end
  if ready.reason == "MovingBindings" then
    return {status = "Progressing", message = ready.message}
  end
  return {status = "Degraded", message = ready.message or ready.reason}
end
for _, lb in ipairs(at.loadBalancers or {}) do
  if lb.state == "NotFound" then
    return {status = "Degraded", message = "Load balancer " .. lb.id .. " of the pool does not exist"}
  end
end
if creating ~= nil then
  return {status = "Progressing", message = creating}
end
for _, lb in ipairs(at.loadBalancers or {}) do
  if (lb.state == "Removed" or lb.state == "Draining") and (lb.allocated or 0) > 0 then
    return {status = "Progressing", message = "Load balancer " .. lb.id .. " (" .. lb.state .. "): " .. lb.allocated .. " bindings moving"}
  end
  if lb.state == "Removed" then
    return {status = "Progressing", message = "Load balancer " .. lb.id .. " left the pool: deleting its listeners"}
  end
end
return {status = "Healthy", message = (at.free or 0) .. " free, " .. (at.allocated or 0) .. " allocated"}
