package check

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/amserver/amserver/e2e/workload"
)

func TestReportAndWriteRun(t *testing.T) {
	h := workload.NewHistory()
	h.Add(workload.Op{Kind: workload.KindWrite, Key: "reg-0", Outcome: workload.Unknown})
	h.Add(workload.Op{Kind: workload.KindRead, Key: "reg-0", Outcome: workload.OK})
	h.Add(workload.Op{Kind: workload.KindCreate, Key: "c-1", Outcome: workload.Fail})
	h.Add(workload.Op{Kind: workload.KindRead, Key: "reg-1", Outcome: workload.OK})
	h.AddSample(workload.Sample{Server: "s1"})
	r := NewReport("partition/leader", 42, h, 3*time.Second)
	if r.Ops != 4 || r.Acked != 2 || r.Failed != 1 || r.Unknown != 1 || r.Samples != 1 || !r.OK {
		t.Fatalf("report counts: %+v", r)
	}
	r.Add(Result{Name: "linearizable", OK: true})
	r.Add(Result{Name: "placement", OK: false, Violations: []string{"x"}, Count: 3})
	r.Add(Result{Name: "converge", OK: true})
	if r.OK {
		t.Fatal("a report with a failed result is OK")
	}
	dir := t.TempDir()
	if err := WriteRun(dir, r, h, []byte("<html></html>")); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "partition_leader") // the name cannot escape dir
	var got Report
	raw, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil || json.Unmarshal(raw, &got) != nil || got.Seed != 42 || got.OK || len(got.Results) != 3 {
		t.Fatalf("summary.json: %v %s", err, raw)
	}
	var hist struct {
		Ops     []workload.Op            `json:"ops"`
		Samples []workload.SampleSummary `json:"samples"`
	}
	raw, err = os.ReadFile(filepath.Join(out, "history.json"))
	if err != nil || json.Unmarshal(raw, &hist) != nil || len(hist.Ops) != 4 || len(hist.Samples) != 1 {
		t.Fatalf("history.json: %v %s", err, raw)
	}
	if _, err := os.Stat(filepath.Join(out, "linearizability.html")); err != nil {
		t.Fatal(err)
	}
	if err := WriteRun(dir, Report{Name: ".."}, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "run", "summary.json")); err != nil {
		t.Fatalf("report named .. not kept inside dir: %v", err)
	}
}

func TestPrintTable(t *testing.T) {
	a := Report{Name: "baseline", Seed: 1, Ops: 100, Unknown: 0, OK: true}
	a.Add(Result{Name: "linearizable", OK: true})
	a.Add(Result{Name: "placement", OK: true})
	b := Report{Name: "kill-leader", Seed: 2, Ops: 90, Unknown: 4}
	b.Add(Result{Name: "linearizable", OK: false, Count: 2})
	b.Add(Result{Name: "converge", OK: false, Violations: []string{"x"}})
	var buf bytes.Buffer
	PrintTable(&buf, []Report{a, b})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want header and 2 rows:\n%s", buf.String())
	}
	for _, want := range []string{"LINEARIZABLE", "PLACEMENT", "CONVERGE", "VERDICT"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("header lacks %s: %q", want, lines[0])
		}
	}
	if f := strings.Fields(lines[1]); strings.Join(f, " ") != "baseline 1 100 0 ok ok - PASS" {
		t.Errorf("row 1 = %q", f)
	}
	if f := strings.Fields(lines[2]); strings.Join(f, " ") != "kill-leader 2 90 4 FAIL(2) - FAIL(1) FAIL" {
		t.Errorf("row 2 = %q", f)
	}
}
