package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// A list page is encoded entry by entry as its rows are read: the bytes
// json.Marshal of the page's entries would give, without holding the
// entries (a thousand whole bundles) until the end, and into a buffer
// that the next page reuses.

// maxPooledPage is the largest page buffer kept for reuse; a larger one
// (a page of big objects) is left to the collector.
const maxPooledPage = 4 << 20

var pageBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// pageEncoder writes one page's JSON array.
type pageEncoder struct {
	buf *bytes.Buffer
	enc *json.Encoder
	n   int
}

func newPageEncoder() *pageEncoder {
	buf := pageBufs.Get().(*bytes.Buffer)
	buf.Reset()
	buf.WriteByte('[')
	return &pageEncoder{buf: buf, enc: json.NewEncoder(buf)}
}

// add appends an entry. v may be reused once add returns.
func (p *pageEncoder) add(v any) error {
	if p.n > 0 {
		p.buf.WriteByte(',')
	}
	if err := p.enc.Encode(v); err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	p.buf.Truncate(p.buf.Len() - 1) // Encode ends each value with a newline
	p.n++
	return nil
}

// size is the body's length so far.
func (p *pageEncoder) size() int { return p.buf.Len() }

// finish closes the array and returns the page's body, a copy of its own.
func (p *pageEncoder) finish() []byte {
	p.buf.WriteString("]\n")
	body := bytes.Clone(p.buf.Bytes())
	p.release()
	return body
}

// release gives the buffer back; the encoder is not used after it.
func (p *pageEncoder) release() {
	if p.buf != nil && p.buf.Cap() <= maxPooledPage {
		pageBufs.Put(p.buf)
	}
	p.buf, p.enc = nil, nil
}
