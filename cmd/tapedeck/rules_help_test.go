package main

import (
	"strings"
	"testing"
)

// TestHelpRules: --rules's help says "see tapedeck help rules", which
// printed the root help; it prints the rules file's format.
func TestHelpRules(t *testing.T) {
	out, _, code := runCLI(t, "help", "rules")
	if code != 0 || strings.Contains(out, "Available Commands") || !strings.Contains(out, "Actions and what they take") || !strings.Contains(out, "at most 10m") {
		t.Errorf("tapedeck help rules: exit %d\n%s\nwant the rules file's format", code, out)
	}
	recordHelp, _, _ := runCLI(t, "record", "--help")
	if !strings.Contains(recordHelp, "see tapedeck help rules") {
		t.Errorf("record --help no longer points at tapedeck help rules:\n%s", recordHelp)
	}
}
