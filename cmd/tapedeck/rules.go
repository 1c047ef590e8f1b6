package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/rules"
)

// rulesFlags are --rules and --seed, shared by record, replay and debug.
type rulesFlags struct {
	file string
	seed int64
}

func (r *rulesFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&r.file, "rules", "", "apply the interception rules in `FILE` (YAML): block, error, modify, delay, respond, duplicate, disconnect or log matching messages; see tapedeck help rules")
	f.Int64Var(&r.seed, "seed", 0, "seed the rules' probability schedules with `N`, so a run can be repeated (default: the file's seed:, else 1)")
}

// load compiles the rules file, or returns nil without one.
func (r *rulesFlags) load(cmd *cobra.Command) (*rules.Set, error) {
	if r.file == "" {
		if cmd.Flags().Changed("seed") {
			return nil, fmt.Errorf("--seed %d without --rules: the seed is for the rules' probability schedules", r.seed)
		}
		return nil, nil
	}
	set, err := rules.LoadContext(cmd.Context(), r.file)
	if err != nil {
		return nil, err
	}
	seed := int64(1)
	if s, ok := set.FileSeed(); ok {
		seed = s
	}
	if cmd.Flags().Changed("seed") {
		seed = r.seed
	}
	set.Seed(seed)
	return set, nil
}

// ruleLog prints the rules' log lines on w.
func ruleLog(w io.Writer) func(string) {
	return func(line string) { fmt.Fprintf(w, "tapedeck: %s\n", line) }
}
