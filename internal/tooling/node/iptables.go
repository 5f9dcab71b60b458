package node

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// The node's components (kube-proxy, the kubelet, CNI's portmap, our
// guard) add iptables chains and rules in both families. Rather than trust
// each one to clean up after itself, the rule sets are saved before the
// node starts and whatever was added since is removed when it stops, or
// when the next run finds the saved sets of a node that was killed.

// family is one iptables family: its command and its save command.
type family struct{ cmd, save string }

func families() []family {
	return []family{{"iptables", "iptables-save"}, {"ip6tables", "ip6tables-save"}}
}

// iptablesOf runs cmd (iptables or ip6tables) on table.
func iptablesOf(cmd, table string, args ...string) error {
	out, err := exec.Command(cmd, append([]string{"-w", "-t", table}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s -t %s %s: %w: %s", cmd, table, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ruleset is what iptables-save prints, per table: its chains and rules.
type ruleset map[string]*table

type table struct {
	chains  []string
	builtin map[string]bool // chains with a policy: never flushed or deleted
	rules   []string        // "CHAIN args…", as after -A
}

func parseRuleset(s string) ruleset {
	rs := ruleset{}
	var t *table
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "*"):
			t = &table{builtin: map[string]bool{}}
			rs[line[1:]] = t
		case t == nil:
		case strings.HasPrefix(line, ":"):
			f := strings.Fields(line[1:])
			t.chains = append(t.chains, f[0])
			if len(f) > 1 && f[1] != "-" {
				t.builtin[f[0]] = true
			}
		case strings.HasPrefix(line, "-A "):
			t.rules = append(t.rules, line[3:])
		}
	}
	return rs
}

// saveRules returns iptables-save's output of a family; "" when the
// family's tools are missing.
func saveRules(f family) (string, error) {
	if _, err := exec.LookPath(f.save); err != nil {
		return "", nil
	}
	out, err := exec.Command(f.save).Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w", f.save, err)
	}
	return string(out), nil
}

// snapshotRules writes each family's rules into dir.
func snapshotRules(dir string) error {
	for _, f := range families() {
		s, err := saveRules(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.save+".before"), []byte(s), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// restoreRules removes the rules and chains added since snapshotRules
// wrote its files in dir. Without the files there is nothing to compare
// with, and only the chains of our own guard are removed.
func restoreRules(dir string) error {
	var errs []error
	for _, f := range families() {
		before, err := os.ReadFile(filepath.Join(dir, f.save+".before"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		now, err := saveRules(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, cmd := range undo(parseRuleset(string(before)), parseRuleset(now)) {
			out, err := exec.Command(f.cmd, append([]string{"-w"}, cmd...)...).CombinedOutput()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s %s: %w: %s", f.cmd, strings.Join(cmd, " "), err, strings.TrimSpace(string(out))))
			}
		}
	}
	return errors.Join(errs...)
}

// undo lists the commands that take now back to before: delete the added
// rules (from the last, so positions stay valid), then flush and delete the
// added chains. Rules and chains that were there before are left alone, and
// a built-in chain (one with a policy) is never flushed or deleted, even
// when its table was not listed before.
func undo(before, now ruleset) [][]string {
	var cmds, chains [][]string
	for name, t := range now {
		old := before[name]
		if old == nil {
			old = &table{}
		}
		for i := len(t.rules) - 1; i >= 0; i-- {
			r := t.rules[i]
			if slices.Contains(old.rules, r) {
				continue
			}
			chain, args, _ := strings.Cut(r, " ")
			if !slices.Contains(old.chains, chain) && !t.builtin[chain] {
				continue // its chain goes as a whole
			}
			cmds = append(cmds, append([]string{"-t", name, "-D", chain}, splitArgs(args)...))
		}
		for _, c := range t.chains {
			if !slices.Contains(old.chains, c) && !t.builtin[c] {
				chains = append(chains, []string{"-t", name, "-F", c}, []string{"-t", name, "-X", c})
			}
		}
	}
	// Flush every added chain before deleting any: they refer to each other.
	slices.SortStableFunc(chains, func(a, b []string) int { return strings.Compare(a[2], b[2]) })
	return append(cmds, chains...)
}

// splitArgs splits a rule as iptables-save prints it: words separated by
// spaces, a double-quoted word kept whole without its quotes.
func splitArgs(s string) []string {
	var (
		args   []string
		cur    strings.Builder
		quoted bool
		inWord bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && quoted && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
		case c == '"':
			quoted, inWord = !quoted, true
		case c == ' ' && !quoted:
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args
}
