package scheduler

import (
	"container/list"
	"sync"

	"github.com/google/cel-go/cel"
)

// defaultExprCacheSize bounds the compiled expressions kept per cache.
const defaultExprCacheSize = 4096

// defaultExprCache serves the zero ExprChecker. It is a pure memo of a
// deterministic function, so sharing it changes no result.
var defaultExprCache = newExprCache(defaultExprCacheSize)

// exprCache is a bounded LRU of compiled expressions keyed by their text,
// so an expression is compiled once however many bundles and nodes use it.
// Compile errors are cached too: a bad expression stays bad.
type exprCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // front = most recently used; values are *exprEntry
	byKey map[string]*list.Element
}

type exprEntry struct {
	expr string
	prg  cel.Program
	err  error
}

func newExprCache(max int) *exprCache {
	if max <= 0 {
		max = defaultExprCacheSize
	}
	return &exprCache{max: max, order: list.New(), byKey: map[string]*list.Element{}}
}

// get returns the compiled program for expr, compiling it on a miss. The
// compile runs outside the lock; two goroutines racing on one new expression
// both compile it, which is harmless.
func (c *exprCache) get(expr string) (cel.Program, error) {
	c.mu.Lock()
	if el, ok := c.byKey[expr]; ok {
		c.order.MoveToFront(el)
		e := el.Value.(*exprEntry)
		c.mu.Unlock()
		return e.prg, e.err
	}
	c.mu.Unlock()
	prg, err := compileExpr(expr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[expr]; !ok {
		c.byKey[expr] = c.order.PushFront(&exprEntry{expr: expr, prg: prg, err: err})
		for c.order.Len() > c.max {
			last := c.order.Back()
			c.order.Remove(last)
			delete(c.byKey, last.Value.(*exprEntry).expr)
		}
	}
	return prg, err
}

// len is the number of cached expressions.
func (c *exprCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}
