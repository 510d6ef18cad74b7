package rowstore

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// item is the test row: an id, a non-unique group, a unique code and a
// set of tags (a multi-valued index).
type item struct {
	ID, Group, Code string
	Tags            []string
}

func testSchema(degree int) Schema {
	return Schema{Degree: degree, Tables: []TableSchema{{
		Name: "items",
		ID:   func(r any) string { return r.(*item).ID },
		Indexes: []IndexSchema{
			{Name: "group", Value: func(r any) string { return r.(*item).Group }},
			{Name: "code", Unique: true, Value: func(r any) string { return r.(*item).Code }},
			{Name: "tag", Values: func(r any) []string { return r.(*item).Tags }},
		},
	}, {
		Name: "other",
		ID:   func(r any) string { return r.(*item).ID },
	}}}
}

func newTestDB(t testing.TB, degree int) *DB {
	t.Helper()
	db, err := New(testSchema(degree))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func ids(it ResultIterator) []string {
	var out []string
	for raw := it.Next(); raw != nil; raw = it.Next() {
		out = append(out, raw.(*item).ID)
	}
	return out
}

func TestSchemaErrors(t *testing.T) {
	id := func(any) string { return "" }
	cases := map[string]Schema{
		"no name":   {Tables: []TableSchema{{ID: id}}},
		"no id":     {Tables: []TableSchema{{Name: "a"}}},
		"dup table": {Tables: []TableSchema{{Name: "a", ID: id}, {Name: "a", ID: id}}},
		"index id":  {Tables: []TableSchema{{Name: "a", ID: id, Indexes: []IndexSchema{{Name: IDIndex, Value: id}}}}},
		"no func":   {Tables: []TableSchema{{Name: "a", ID: id, Indexes: []IndexSchema{{Name: "x"}}}}},
		"two funcs": {Tables: []TableSchema{{Name: "a", ID: id, Indexes: []IndexSchema{{Name: "x", Value: id, Values: func(any) []string { return nil }}}}}},
		"dup index": {Tables: []TableSchema{{Name: "a", ID: id, Indexes: []IndexSchema{{Name: "x", Value: id}, {Name: "x", Value: id}}}}},
	}
	for name, s := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := New(s); err == nil {
				t.Fatal("New accepted a bad schema")
			}
		})
	}
}

func TestTxnErrors(t *testing.T) {
	db := newTestDB(t, 0)
	r := db.Txn(false)
	if err := r.Insert("items", &item{ID: "a"}); err == nil {
		t.Fatal("a read transaction wrote")
	}
	w := db.Txn(true)
	if err := w.Insert("nope", &item{ID: "a"}); err == nil {
		t.Fatal("insert into a missing table")
	}
	if err := w.Insert("items", &item{}); err == nil {
		t.Fatal("insert of a row without an id")
	}
	if err := w.Delete("items", &item{ID: "a"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete of a missing row: %v", err)
	}
	if _, err := w.First("items", "nope", "x"); err == nil {
		t.Fatal("first on a missing index")
	}
	if _, err := w.Get("nope", IDIndex, "x"); err == nil {
		t.Fatal("get on a missing table")
	}
	w.Commit()
	w.Abort() // after commit: a no-op, as a deferred Abort needs
	if err := w.Insert("items", &item{ID: "a"}); err == nil {
		t.Fatal("insert after commit")
	}
	db.Txn(true).Abort() // the writer lock was released
}

// TestIterateWhileWriting writes the table an open iterator walks: the
// iterator must neither skip rows it has not reached nor repeat one.
func TestIterateWhileWriting(t *testing.T) {
	db := newTestDB(t, 2)
	w := db.Txn(true)
	for i := range 50 {
		must(t, w.Insert("items", &item{ID: key(i * 2), Group: "g"}))
	}
	it, err := w.All("items", IDIndex)
	must(t, err)
	sec, err := w.Get("items", "group", "g")
	must(t, err)
	var got, gotSec []string
	for i := 0; ; i++ {
		raw := it.Next()
		if raw == nil {
			break
		}
		got = append(got, raw.(*item).ID)
		if s := sec.Next(); s != nil {
			gotSec = append(gotSec, s.(*item).ID)
		}
		// Insert a row (ahead or behind) and delete one already passed.
		must(t, w.Insert("items", &item{ID: key(i*2 + 1), Group: "g"}))
		if len(got) > 2 {
			must(t, w.Delete("items", &item{ID: got[len(got)-3]}))
		}
	}
	if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatalf("iteration not strictly increasing: %v", got)
	}
	for i := range 50 {
		if !slices.Contains(got, key(i*2)) {
			t.Fatalf("iteration skipped %s, present all along until passed", key(i*2))
		}
	}
	if !slices.IsSorted(gotSec) || len(slices.Compact(slices.Clone(gotSec))) != len(gotSec) {
		t.Fatalf("index iteration not strictly increasing: %v", gotSec)
	}
	w.Abort()
}

func key(i int) string { return fmt.Sprintf("%04d", i) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// model is the reference: a map per table of committed rows.
type model map[string]item

func (m model) byIndex(index, value string, exact bool) []string {
	type pair struct{ key, id string }
	var all []pair
	for id, r := range m {
		var vals []string
		switch index {
		case IDIndex:
			vals = []string{id}
		case "group":
			vals = nonEmpty(r.Group)
		case "code":
			vals = nonEmpty(r.Code)
		case "tag":
			vals = r.Tags
		}
		for _, v := range vals {
			if (exact && v == value) || (!exact && v >= value) {
				all = append(all, pair{v, id})
			}
		}
	}
	slices.SortFunc(all, func(a, b pair) int {
		if c := strings.Compare(a.key, b.key); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	var out []string
	for _, p := range all {
		out = append(out, p.id)
	}
	return out
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// TestMatchesModel applies random transactions (committed or aborted) and
// checks every index of every version against a model, including versions
// a reader held across later commits.
func TestMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		db := newTestDB(t, rapid.IntRange(2, 8).Draw(rt, "degree"))
		committed := model{}
		type held struct {
			txn *Txn
			m   model
		}
		var readers []held
		idGen := rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"})
		valGen := rapid.SampledFrom([]string{"", "x", "y", "z"})
		for range rapid.IntRange(1, 12).Draw(rt, "txns") {
			w := db.Txn(true)
			m := maps.Clone(committed)
			for range rapid.IntRange(0, 20).Draw(rt, "ops") {
				id := idGen.Draw(rt, "id")
				if rapid.Bool().Draw(rt, "delete") {
					err := w.Delete("items", &item{ID: id})
					if _, ok := m[id]; ok != (err == nil) {
						rt.Fatalf("delete %s: present %v, err %v", id, ok, err)
					}
					delete(m, id)
					continue
				}
				r := item{ID: id, Group: valGen.Draw(rt, "group"), Code: valGen.Draw(rt, "code")}
				r.Tags = slices.Compact(slices.Sorted(slices.Values(rapid.SliceOfN(rapid.SampledFrom([]string{"p", "q", "r"}), 0, 3).Draw(rt, "tags"))))
				if r.Code != "" { // unique: the new row takes the code over
					for oid, o := range m {
						if o.Code == r.Code && oid != id {
							o.Code = ""
							m[oid] = o
						}
					}
				}
				cp := r
				if err := w.Insert("items", &cp); err != nil {
					rt.Fatal(err)
				}
				m[id] = r
				checkTxn(rt, w, m) // reads inside the transaction see its writes
			}
			if rapid.Bool().Draw(rt, "commit") {
				w.Commit()
				committed = m
			} else {
				w.Abort()
			}
			readers = append(readers, held{db.Txn(false), committed})
			for _, h := range readers {
				checkTxn(rt, h.txn, h.m)
			}
		}
		snap := db.Snapshot()
		checkTxn(rt, snap.Txn(false), committed)
	})
}

// checkTxn compares every lookup of txn with the model. The unique index
// in the model is maintained by the test as the store documents it.
func checkTxn(rt *rapid.T, txn *Txn, m model) {
	for _, index := range []string{IDIndex, "group", "code", "tag"} {
		all, err := txn.All("items", index)
		if err != nil {
			rt.Fatal(err)
		}
		if got, want := ids(all), m.byIndex(index, "", false); !slices.Equal(got, want) {
			rt.Fatalf("all %s: got %v want %v", index, got, want)
		}
		for _, v := range []string{"", "a", "c", "x", "y", "p", "q", "zz"} {
			it, _ := txn.Get("items", index, v)
			if got, want := ids(it), m.byIndex(index, v, true); !slices.Equal(got, want) {
				rt.Fatalf("get %s=%q: got %v want %v", index, v, got, want)
			}
			lb, _ := txn.LowerBound("items", index, v)
			if got, want := ids(lb), m.byIndex(index, v, false); !slices.Equal(got, want) {
				rt.Fatalf("lower bound %s>=%q: got %v want %v", index, v, got, want)
			}
			if n, err := txn.Count("items", index, v); err != nil || n != len(m.byIndex(index, v, true)) {
				rt.Fatalf("count %s=%q: got %d (%v) want %d", index, v, n, err, len(m.byIndex(index, v, true)))
			}
			first, _ := txn.First("items", index, v)
			want := m.byIndex(index, v, true)
			switch {
			case len(want) == 0 && first != nil:
				rt.Fatalf("first %s=%q: got %v want none", index, v, first)
			case len(want) > 0 && (first == nil || first.(*item).ID != want[0]):
				rt.Fatalf("first %s=%q: got %v want %s", index, v, first, want[0])
			}
		}
	}
}

// TestReadersDuringWrites runs readers over published versions while a
// writer rewrites the same rows; under -race, a write to a node a
// published version shares fails the test, and every reader must see a
// consistent version (each row's group equals the version's stamp).
func TestReadersDuringWrites(t *testing.T) {
	db := newTestDB(t, 2)
	const rows = 200
	stamp := func(v int) string { return fmt.Sprintf("v%04d", v) }
	write := func(v int) {
		w := db.Txn(true)
		for i := range rows {
			must(t, w.Insert("items", &item{ID: key(i), Group: stamp(v), Tags: []string{stamp(v)}}))
		}
		w.Commit()
	}
	write(0)
	done := make(chan struct{})
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				r := db.Txn(false)
				first, _ := r.First("items", IDIndex, key(0))
				want := first.(*item).Group
				it, _ := r.Get("items", "group", want)
				if n := len(ids(it)); n != rows {
					errs <- fmt.Errorf("version %s: %d rows in its group, want %d", want, n, rows)
					return
				}
			}
		}()
	}
	for v := 1; v <= 50; v++ {
		write(v)
	}
	close(done)
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
