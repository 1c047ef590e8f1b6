// Command ratios times tapedeck's bulk commands as whole processes, each
// against `tapedeck stats` of the same tape run just before it, and prints
// the CPU ratios of issue 23's budgets (medians of paired runs, so that a
// machine whose speed drifts still gives a fair ratio). CPU is the child's
// user + system time as the kernel accounts it (rusage), not wall time:
// other load on a shared machine leaves it nearly alone.
//
//	go run ./bench/ratios [-n 100000] [-runs 5] [-only export]
//
// It builds tapedeck, writes the realistic benchmark tape
// (tape.BenchProfiles; -n messages) and, for the jobs that run, a second
// one differing in one call in 10 000 and one left out in 50 000 (diff's
// B) and the import sources (an mcpsnoop log, a gh-aw log and an Inspector
// export of the tape from internal/benchsrc; HAR and OTLP JSON with bodies
// from tapedeck's own export), in a temporary directory it removes. Each
// command's output goes to /dev/null, except an import's tape: a new file
// each run, as `import -o` wants, removed after.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tapedeck/tapedeck/internal/benchsrc"
	"github.com/tapedeck/tapedeck/tape"
)

type job struct {
	name   string
	args   []string // after the binary; OUT is replaced by a new file's path
	budget float64
	base   string // "stats" (default) or "wc" (a line count of the tape)
}

func main() {
	n := flag.Int("n", 100_000, "messages on the realistic tape")
	runs := flag.Int("runs", 5, "paired runs of each command")
	only := flag.String("only", "", "run only the jobs whose name contains this")
	flag.Parse()
	if err := run(*n, *runs, *only); err != nil {
		fmt.Fprintln(os.Stderr, "ratios:", err)
		os.Exit(1)
	}
}

func run(n, runs int, only string) error {
	dir, err := os.MkdirTemp("", "tapedeck-ratios-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "tapedeck")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/tapedeck").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	a, b := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	opts := tape.SynthOptions{Messages: n, Seed: 1, Profile: tape.SynthRealistic}
	if _, err := tape.WriteSynth(a, opts); err != nil {
		return err
	}
	// B and the sources are written only for the jobs that run: at
	// -n 1000000 each is gigabytes.
	want := func(name string) bool { return only == "" || strings.Contains(name, only) }
	opts.ChangeEvery, opts.DropEvery = 10_000, 50_000
	if want("diff A B") {
		if _, err := tape.WriteSynth(b, opts); err != nil {
			return err
		}
	}
	srcs := map[string]string{}
	for _, f := range benchsrc.Formats {
		srcs[f] = filepath.Join(dir, "a."+f)
		if !want("import " + f) {
			continue
		}
		if err := benchsrc.Write(f, a, srcs[f]); err != nil {
			return err
		}
	}
	har, otlp := filepath.Join(dir, "a.har"), filepath.Join(dir, "a.otlp.json")
	for _, args := range [][]string{
		{"export", a, "--format", "har", "-o", har},
		{"export", a, "--format", "otlp", "--with-bodies", "-o", otlp},
	} {
		if !want("import " + args[3]) {
			continue
		}
		if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("tapedeck %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	jobs := []job{
		{name: "stats vs wc -l", args: []string{"stats", a}, budget: 4, base: "wc"},
		{name: "diff A B", args: []string{"diff", a, b}, budget: 3},
		{name: "check", args: []string{"check", a}, budget: 3},
		{name: "check --spec", args: []string{"check", "--spec", a}, budget: 3},
		{name: "export json", args: []string{"export", a, "--format", "json"}, budget: 2},
		{name: "export otlp", args: []string{"export", a, "--format", "otlp"}, budget: 2},
		{name: "export har", args: []string{"export", a, "--format", "har"}, budget: 2},
		{name: "import mcpsnoop", args: []string{"import", "--from", "mcpsnoop", srcs["mcpsnoop"], "-o", "OUT"}, budget: 2},
		{name: "import gh-aw", args: []string{"import", "--from", "gh-aw", srcs["gh-aw"], "-o", "OUT"}, budget: 2},
		{name: "import inspector", args: []string{"import", "--from", "inspector", srcs["inspector"], "-o", "OUT"}, budget: 2},
		{name: "import har", args: []string{"import", "--from", "har", har, "-o", "OUT"}, budget: 2},
		{name: "import otlp", args: []string{"import", "--from", "otlp", otlp, "-o", "OUT"}, budget: 2},
	}
	st, _ := os.Stat(a)
	fmt.Printf("realistic tape: %d messages, %d MB; %d paired runs a command; CPU = user + system of the child\n",
		n, st.Size()>>20, runs)
	fmt.Printf("%-18s %12s %12s %10s %16s %8s\n", "command", "cpu ms", "base ms", "ratio", "min–max", "budget")
	for _, j := range jobs {
		if !want(j.name) {
			continue
		}
		var cpu, base, ratio []float64
		for i := 0; i <= runs; i++ { // run 0 warms the page cache
			var bd time.Duration
			if j.base == "wc" {
				bd, err = cpuOf(dir, "wc", "-l", a)
			} else {
				bd, err = cpuOf(dir, bin, "stats", a)
			}
			if err != nil {
				return err
			}
			cd, err := cpuOf(dir, bin, j.args...)
			if err != nil {
				return fmt.Errorf("%s: %w", j.name, err)
			}
			if i == 0 {
				continue
			}
			cpu, base = append(cpu, ms(cd)), append(base, ms(bd))
			ratio = append(ratio, float64(cd)/float64(bd))
		}
		slices.Sort(ratio)
		fmt.Printf("%-18s %12.1f %12.1f %9.2f× %7.2f–%.2f× %7.0f×\n", j.name, median(cpu), median(base),
			median(ratio), ratio[0], ratio[len(ratio)-1], j.budget)
	}
	return nil
}

// cpuOf runs name with args (OUT in args replaced by a new file in dir,
// removed after) with its output to /dev/null and returns its CPU time.
func cpuOf(dir, name string, args ...string) (time.Duration, error) {
	args = slices.Clone(args)
	var out string
	for i, s := range args {
		if s == "OUT" {
			out = filepath.Join(dir, fmt.Sprintf("out-%d.jsonl", time.Now().UnixNano()))
			args[i] = out
		}
	}
	if out != "" {
		defer os.Remove(out)
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer null.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout = null
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	// diff exits 1 when the tapes differ, as they do here, and check
	// when it finds something (the tape's JSON-RPC errors).
	verdict := name != "wc" && (args[0] == "diff" || args[0] == "check")
	if ee, ok := err.(*exec.ExitError); err != nil && !(ok && ee.ExitCode() == 1 && verdict) {
		return 0, fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, fmt.Errorf("no rusage for %s", name)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}
