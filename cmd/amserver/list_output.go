package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// listPrinter prints a list as it is walked: a table a page at a time
// (columns sized by what came so far, so a page prints as soon as it
// arrives), or one JSON array whose items are written as they come.
type listPrinter[T any] struct {
	w      io.Writer
	format string
	l      listCmd[T]
	batch  int
	now    time.Time

	rows   [][]string // rows of the current page, not printed yet
	widths []int
	header bool // the header is printed
	items  int  // JSON items written
}

func newListPrinter[T any](w io.Writer, format string, l listCmd[T], batch int) *listPrinter[T] {
	return &listPrinter[T]{w: w, format: format, l: l, batch: batch, now: time.Now()}
}

func (p *listPrinter[T]) add(item T) error {
	if p.format == outJSON {
		return p.addJSON(item)
	}
	row := p.l.Row(item, p.now)
	if p.format == outWide {
		row = append(row, p.l.WideRow(item, p.now)...)
	}
	p.rows = append(p.rows, row)
	if len(p.rows) >= p.batch {
		return p.flush()
	}
	return nil
}

func (p *listPrinter[T]) addJSON(item T) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("  ", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(item); err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	sep := ",\n  "
	if p.items == 0 {
		sep = "[\n  "
	}
	p.items++
	_, err := io.WriteString(p.w, sep+strings.TrimSuffix(buf.String(), "\n"))
	return err
}

// flush prints the rows held (with the header before the first).
func (p *listPrinter[T]) flush() error {
	if p.format == outJSON {
		return nil
	}
	var rows [][]string
	if !p.header {
		cols := p.l.Columns
		if p.format == outWide {
			cols = append(append([]string(nil), cols...), p.l.WideColumns...)
		}
		rows = append(rows, cols)
		p.header = true
	}
	rows = append(rows, p.rows...)
	p.rows = p.rows[:0]
	for _, r := range rows {
		for i, c := range r {
			r[i] = clean(c)
			if i >= len(p.widths) {
				p.widths = append(p.widths, 0)
			}
			p.widths[i] = max(p.widths[i], utf8.RuneCountInString(r[i]))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			if i == len(r)-1 {
				b.WriteString(c)
				break
			}
			b.WriteString(c + strings.Repeat(" ", p.widths[i]-utf8.RuneCountInString(c)+2))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(p.w, b.String())
	return err
}

// abort ends the output of a walk an error cut short. What was printed
// stays printed (a JSON array is closed) and the error and the exit code
// say the list is incomplete; a walk that got nothing prints nothing, as
// an empty table or [] would read as a list that is empty.
func (p *listPrinter[T]) abort() error {
	if p.items == 0 && !p.header && len(p.rows) == 0 {
		return nil
	}
	return p.close()
}

// close ends the output: the last rows, or the JSON array's end.
func (p *listPrinter[T]) close() error {
	if p.format != outJSON {
		return p.flush()
	}
	end := "\n]\n"
	if p.items == 0 {
		end = "[]\n"
	}
	_, err := io.WriteString(p.w, end)
	return err
}
