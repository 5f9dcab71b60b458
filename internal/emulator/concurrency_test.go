package emulator_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	clb "github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/clb/v20180317"
	"github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/common"

	"github.com/tencentcloud-network/provider-tencentcloud-network/internal/emulator/emulatortest"
)

// TestConcurrentWriters races 32 SDK clients creating listeners on
// overlapping ports and binding targets on four load balancers. Busy load
// balancers are retried like a real client would; afterwards every
// success must be in the inventory exactly once and no port may be held
// twice.
func TestConcurrentWriters(t *testing.T) {
	const (
		workers = 32
		ops     = 12
		lbCount = 4
		ports   = 40
	)
	cfg := instant()
	cfg.TaskDuration = 2 * time.Millisecond
	cfg.ListenerQuota = ports
	e, endpoint, c := env(t, cfg)
	c.WithHttpTransport(emulatortest.Transport())
	var lbs []string
	for i := range lbCount {
		lbs = append(lbs, createLB(t, c, fmt.Sprintf("race-%d", i)))
	}

	type created struct{ lb, id string }
	var (
		mu        sync.Mutex
		byPort    = map[string]created{} // "lb/port" -> listener
		listeners []created
		bound     = map[string]bool{} // "listener/ip" -> bound
		conflicts int
	)
	retryBusy := func(call func() error) error {
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := call()
			if code(err) != clb.FAILEDOPERATION_RESOURCEINOPERATING || time.Now().After(deadline) {
				return err
			}
			time.Sleep(time.Duration(rand.IntN(3)+1) * time.Millisecond)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, workers*ops)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := emulatortest.DefaultClient(t, endpoint)
			client.WithHttpTransport(emulatortest.Transport())
			for op := range ops {
				lb := lbs[rand.IntN(lbCount)]
				if op%3 == 2 { // bind a target on some existing listener
					mu.Lock()
					if len(listeners) == 0 {
						mu.Unlock()
						continue
					}
					l := listeners[rand.IntN(len(listeners))]
					mu.Unlock()
					ip := fmt.Sprintf("10.%d.%d.1", w, op)
					req := clb.NewBatchRegisterTargetsRequest()
					req.LoadBalancerId = &l.lb
					req.Targets = []*clb.BatchTarget{{ListenerId: &l.id, EniIp: &ip, Port: common.Int64Ptr(80)}}
					var resp *clb.BatchRegisterTargetsResponse
					err := retryBusy(func() (err error) { resp, err = client.BatchRegisterTargets(req); return })
					if err != nil {
						errs <- err
						continue
					}
					if len(resp.Response.FailListenerIdSet) == 0 {
						mu.Lock()
						bound[l.id+"/"+ip] = true
						mu.Unlock()
					}
					continue
				}
				port := int64(1000 + rand.IntN(ports))
				var resp *clb.CreateListenerResponse
				err := retryBusy(func() (err error) { resp, err = client.CreateListener(newCreateListener(lb, "TCP", port)); return })
				switch code(err) {
				case "":
					mu.Lock()
					key := fmt.Sprintf("%s/%d", lb, port)
					if prev, dup := byPort[key]; dup {
						errs <- fmt.Errorf("port %s created twice: %s and %s", key, prev.id, *resp.Response.ListenerIds[0])
					}
					l := created{lb, *resp.Response.ListenerIds[0]}
					byPort[key] = l
					listeners = append(listeners, l)
					mu.Unlock()
				case clb.INVALIDPARAMETER_PORTCHECKFAILED:
					mu.Lock()
					conflicts++
					mu.Unlock()
				default:
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if conflicts == 0 {
		t.Fatalf("no port conflicts: the test did not race")
	}

	// Let the last tasks finish, then compare with the inventory.
	deadline := time.Now().Add(5 * time.Second)
	for e.Inventory().RunningTasks > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	inv := e.Inventory()
	seenPorts := map[string]string{}
	got := 0
	targets := 0
	for _, lb := range inv.LoadBalancers {
		if lb.Busy {
			t.Errorf("%s still busy", lb.ID)
		}
		for _, l := range lb.Listeners {
			key := fmt.Sprintf("%s/%d", lb.ID, l.Port)
			if other, dup := seenPorts[key]; dup {
				t.Errorf("port %s held by %s and %s", key, other, l.ID)
			}
			seenPorts[key] = l.ID
			if byPort[key].id != l.ID {
				t.Errorf("inventory has %s on %s, clients created %s", l.ID, key, byPort[key].id)
			}
			got++
			seenIP := map[string]bool{}
			for _, tg := range l.Targets {
				if seenIP[tg.IP] || !bound[l.ID+"/"+tg.IP] {
					t.Errorf("unexpected or duplicate target %s on %s", tg.IP, l.ID)
				}
				seenIP[tg.IP] = true
				targets++
			}
		}
	}
	if got != len(byPort) || targets != len(bound) {
		t.Fatalf("inventory: %d listeners / %d targets, clients saw %d / %d", got, targets, len(byPort), len(bound))
	}
	t.Logf("%d listeners, %d targets, %d port conflicts", got, targets, conflicts)
}
