package check

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/internal/text"
)

// WriteText writes a finding a line: TAPE:LINE: RULE: MESSAGE, failing
// ones first marked FAIL, the others note.
func WriteText(w io.Writer, fs []Finding, tapes []string) error {
	fails := 0
	for _, f := range fs {
		level := "note"
		if f.Fail {
			level, fails = "FAIL", fails+1
		}
		loc := f.Tape
		if f.Line > 0 {
			loc += fmt.Sprintf(":%d", f.Line)
		}
		if _, err := fmt.Fprintf(w, "%s %s: %s: %s\n", level, loc, f.Rule, f.Message); err != nil {
			return err
		}
	}
	verdict := "pass"
	if fails > 0 {
		verdict = fmt.Sprintf("fail (%d failing)", fails)
	}
	_, err := fmt.Fprintf(w, "%s checked, %s: %s\n", text.Plural(len(tapes), "tape"), text.Plural(len(fs), "finding"), verdict)
	return err
}

// WriteGitHub writes GitHub Actions workflow commands: an annotation a
// finding, ::error for failing ones, ::notice for the others.
func WriteGitHub(w io.Writer, fs []Finding) error {
	esc := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	prop := strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
	for _, f := range fs {
		level := "notice"
		if f.Fail {
			level = "error"
		}
		line := ""
		if f.Line > 0 {
			line = fmt.Sprintf(",line=%d", f.Line)
		}
		if _, err := fmt.Fprintf(w, "::%s file=%s%s,title=%s::%s\n", level, prop.Replace(f.Tape), line, prop.Replace("tapedeck "+f.Rule), esc.Replace(f.Message)); err != nil {
			return err
		}
	}
	return nil
}

// WriteJUnit writes a JUnit XML report: a test suite a tape, a test case
// a rule that failed with its findings, or one passing case.
func WriteJUnit(w io.Writer, fs []Finding, tapes []string) error {
	var suites []JUnitSuite
	for _, t := range tapes {
		s := JUnitSuite{Name: t}
		byRule := map[string][]string{}
		var order []string
		for _, f := range fs {
			if f.Tape != t || !f.Fail {
				continue
			}
			if byRule[f.Rule] == nil {
				order = append(order, f.Rule)
			}
			loc := ""
			if f.Line > 0 {
				loc = fmt.Sprintf("line %d: ", f.Line)
			}
			byRule[f.Rule] = append(byRule[f.Rule], loc+f.Message)
		}
		for _, r := range order {
			s.Cases = append(s.Cases, JUnitCase{Name: r, Classname: "tapedeck.check", Failure: &JUnitFailure{Message: fmt.Sprintf("%d %s findings", len(byRule[r]), r), Text: strings.Join(byRule[r], "\n")}})
		}
		if len(s.Cases) == 0 {
			s.Cases = append(s.Cases, JUnitCase{Name: "check", Classname: "tapedeck.check"})
		}
		s.Tests, s.Failures = len(s.Cases), len(order)
		suites = append(suites, s)
	}
	return EncodeJUnit(w, suites)
}

// WriteSARIF writes a SARIF 2.1.0 log: one run, the rules as the tool's
// rules, a result a finding located at its tape and line.
func WriteSARIF(w io.Writer, fs []Finding, version string) error {
	type region struct {
		StartLine int `json:"startLine"`
	}
	type artifact struct {
		URI string `json:"uri"`
	}
	type physical struct {
		ArtifactLocation artifact `json:"artifactLocation"`
		Region           *region  `json:"region,omitempty"`
	}
	type location struct {
		PhysicalLocation physical `json:"physicalLocation"`
	}
	type message struct {
		Text string `json:"text"`
	}
	type result struct {
		RuleID    string     `json:"ruleId"`
		Level     string     `json:"level"`
		Message   message    `json:"message"`
		Locations []location `json:"locations"`
	}
	type rule struct {
		ID               string   `json:"id"`
		ShortDescription message  `json:"shortDescription"`
		HelpURI          string   `json:"helpUri,omitempty"`
		Help             *message `json:"help,omitempty"`
	}
	type driver struct {
		Name           string `json:"name"`
		Version        string `json:"version,omitempty"`
		InformationURI string `json:"informationUri,omitempty"`
		Rules          []rule `json:"rules"`
	}
	type run struct {
		Tool struct {
			Driver driver `json:"driver"`
		} `json:"tool"`
		Results []result `json:"results"`
	}
	log := struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []run  `json:"runs"`
	}{Schema: "https://json.schemastore.org/sarif-2.1.0.json", Version: "2.1.0"}
	var r run
	r.Tool.Driver = driver{Name: "tapedeck", Version: version}
	for _, ru := range Rules {
		r.Tool.Driver.Rules = append(r.Tool.Driver.Rules, rule{ID: ru.ID, ShortDescription: message{Text: ru.Help}})
	}
	// check --spec's rules carry the section of the specification they
	// hold a session to (auth-challenge is already listed: it gains its
	// section).
	for _, sr := range SpecRules {
		ru := rule{ID: sr.ID, ShortDescription: message{Text: sr.Help}, HelpURI: sr.URL(),
			Help: &message{Text: sr.Help + " (MCP " + sr.Since + ", " + sr.Path + ": " + sr.URL() + ")"}}
		if k := slices.IndexFunc(r.Tool.Driver.Rules, func(x rule) bool { return x.ID == sr.ID }); k >= 0 {
			r.Tool.Driver.Rules[k].HelpURI, r.Tool.Driver.Rules[k].Help = ru.HelpURI, ru.Help
			continue
		}
		r.Tool.Driver.Rules = append(r.Tool.Driver.Rules, ru)
	}
	r.Results = []result{}
	for _, f := range fs {
		level := "note"
		if f.Fail {
			level = "error"
		}
		loc := physical{ArtifactLocation: artifact{URI: filepath.ToSlash(f.Tape)}}
		if f.Line > 0 {
			loc.Region = &region{StartLine: f.Line}
		}
		r.Results = append(r.Results, result{RuleID: f.Rule, Level: level, Message: message{Text: f.Message}, Locations: []location{{PhysicalLocation: loc}}})
	}
	log.Runs = []run{r}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(log)
}
