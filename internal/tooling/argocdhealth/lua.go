package argocdhealth

import (
	"context"
	"fmt"
	"slices"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Health statuses Argo CD accepts from a script.
const (
	Healthy     = "Healthy"
	Progressing = "Progressing"
	Degraded    = "Degraded"
	Suspended   = "Suspended"
	Missing     = "Missing"
	Unknown     = "Unknown"
)

// validStatuses are the statuses Argo CD accepts.
func validStatuses() []string {
	return []string{Healthy, Progressing, Degraded, Suspended, Missing, Unknown}
}

// A Status is what a script returns: hs.status and hs.message.
type Status struct {
	Status  string
	Message string
}

// scriptTimeout is the time Argo CD gives a script.
const scriptTimeout = time.Second

// Assess runs a health script on obj as Argo CD does for a script from
// argocd-cm: the same engine (gopher-lua), only the package, base and table
// libraries (Argo CD adds a reduced os library; our scripts do not use
// it, so a script that did would fail here), obj as the global "obj"
// converted from the object's JSON form, a one-second limit, and the
// returned table read as {status, message}. A status Argo CD would refuse
// is an error here.
func Assess(script string, obj map[string]any) (Status, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.LoadLibName, lua.OpenPackage},
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
	} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return Status{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return Status{}, err
	}
	tbl, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return Status{}, fmt.Errorf("the script returned %s, not a table", l.Get(-1).Type())
	}
	var s Status
	for field, into := range map[string]*string{"status": &s.Status, "message": &s.Message} {
		switch v := tbl.RawGetString(field).(type) {
		case lua.LString:
			*into = string(v)
		case *lua.LNilType:
		default:
			return Status{}, fmt.Errorf("hs.%s is a %s, not a string", field, v.Type())
		}
	}
	if !slices.Contains(validStatuses(), s.Status) {
		return Status{}, fmt.Errorf("hs.status %q is not one of %v", s.Status, validStatuses())
	}
	return s, nil
}

// toLua converts an object decoded from JSON (as Kubernetes' unstructured
// objects are) into Lua values: maps and lists become tables, numbers Lua
// numbers, null nil.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case bool:
		return lua.LBool(v)
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case int64:
		return lua.LNumber(v)
	case int:
		return lua.LNumber(v)
	case int32:
		return lua.LNumber(v)
	case []any:
		t := l.CreateTable(len(v), 0)
		for _, e := range v {
			t.Append(toLua(l, e))
		}
		return t
	case map[string]any:
		t := l.CreateTable(0, len(v))
		for k, e := range v {
			t.RawSetH(lua.LString(k), toLua(l, e))
		}
		return t
	}
	return lua.LNil
}
