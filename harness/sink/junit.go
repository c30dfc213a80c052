package sink

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// junit writes, at the end, one JUnit XML document: a test suite with the
// tests KTAP has (tests.go), a failure's diagnostics as its text.
type junit struct {
	out   *output
	start runner.Start
	cases []testCase        // a replay's, as they come
	texts map[string]string // a compare's finding files, by signature
}

func (j *junit) Err() error { return j.out.err }

func (j *junit) Start(s runner.Start) { j.start = s }

func (j *junit) Script(s runner.Script) {
	if j.start.Files != nil {
		j.cases = append(j.cases, replayCase(s))
	}
}

func (j *junit) Found(f runner.Found) { j.texts[f.Finding.Signature] = f.Text }

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func (j *junit) End(e runner.End) {
	res := e.Result
	if res == nil {
		return
	}
	cases := j.cases
	kind := "replay"
	if j.start.Files != nil {
		for i := len(cases); i < len(j.start.Files); i++ {
			cases = append(cases, notRun(j.start.Files[i], e))
		}
	} else {
		kind = "compare"
		cases = compareCases(j.start, e, j.texts)
	}
	suite := junitSuite{Name: fmt.Sprintf("ipcfuzz %s %s vs %s (%s)", kind, SideLabel(res.A, res.KernelA), SideLabel(res.B, res.KernelB), res.Subsystem),
		Tests: len(cases), Time: fmt.Sprintf("%.3f", res.Seconds)}
	for _, p := range [][2]string{{"command", j.start.Command}, {"relation", res.Relation}, {"engine", res.Engine}} {
		if p[1] != "" {
			suite.Properties = append(suite.Properties, junitProperty{p[0], p[1]})
		}
	}
	if kind == "compare" {
		suite.Properties = append(suite.Properties, junitProperty{"seed", fmt.Sprint(res.Seed)})
	}
	for _, c := range cases {
		jc := junitCase{Name: c.name, Classname: "ipcfuzz." + res.Subsystem}
		text := strings.Join(c.diag, "\n")
		switch c.status {
		case failed:
			suite.Failures++
			msg := c.name
			if len(c.diag) > 0 {
				msg = c.diag[0]
			}
			jc.Failure = &junitMessage{Message: msg, Text: text}
		case skipped:
			suite.Skipped++
			jc.Skipped = &junitMessage{Message: c.skip}
			jc.SystemOut = text
		default:
			jc.SystemOut = text
		}
		suite.Cases = append(suite.Cases, jc)
	}
	doc := junitSuites{Name: "ipcfuzz", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Time: suite.Time, Suites: []junitSuite{suite}}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		j.out.err = err
		return
	}
	j.out.print(xml.Header)
	j.out.print(string(b))
	j.out.print("\n")
}
