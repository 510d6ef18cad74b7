package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
)

// A list page is encoded entry by entry as its rows are read: the bytes
// json.Marshal of the page's entries would give, without holding the
// entries (a thousand whole bundles) until the end, and into a pooled
// buffer. The buffer is the page's body: the shared answers hand it back
// to the pool once no request is sending it (shared.go), so a walk reuses
// one buffer instead of allocating a body per page.

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

// finish closes the array and hands over the buffer holding the page's
// body; the caller gives it back with putPageBuf once the body is sent.
func (p *pageEncoder) finish() *bytes.Buffer {
	p.buf.WriteString("]\n")
	buf := p.buf
	p.buf, p.enc = nil, nil
	return buf
}

// release gives the buffer back unless finish handed it over; the encoder
// is not used after it.
func (p *pageEncoder) release() {
	putPageBuf(p.buf)
	p.buf, p.enc = nil, nil
}

// putPageBuf returns a page's buffer to the pool; nothing may read the
// body after it.
func putPageBuf(buf *bytes.Buffer) {
	if buf != nil && buf.Cap() <= maxPooledPage {
		pageBufs.Put(buf)
	}
}
