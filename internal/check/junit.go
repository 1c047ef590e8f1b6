package check

import (
	"encoding/xml"
	"io"
)

// JUnitSuite is one test suite of a JUnit XML report: check writes one a
// tape, verify one for the server it drove.
type JUnitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr,omitempty"`
	Time     float64     `xml:"time,attr,omitempty"` // seconds
	Cases    []JUnitCase `xml:"testcase"`
}

// JUnitCase is one test case: passed, or with a Failure, or Skipped.
type JUnitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr,omitempty"` // seconds
	Failure   *JUnitFailure `xml:"failure,omitempty"`
	Skipped   *JUnitSkipped `xml:"skipped,omitempty"`
}

// JUnitFailure is a failed case's message and its details.
type JUnitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// JUnitSkipped says why a case was not checked.
type JUnitSkipped struct {
	Message string `xml:"message,attr"`
}

// EncodeJUnit writes suites as one JUnit XML document (<testsuites>), the
// one JUnit writer of tapedeck.
func EncodeJUnit(w io.Writer, suites []JUnitSuite) error {
	doc := struct {
		XMLName xml.Name     `xml:"testsuites"`
		Suites  []JUnitSuite `xml:"testsuite"`
	}{Suites: suites}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
