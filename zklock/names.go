package zklock

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
)

// Listing what a root holds: the names of its locks, elections or
// semaphores that have contenders now, found by walking the root's tree.

// MaxNamesVisited bounds the nodes one listing reads, whatever its limit.
const MaxNamesVisited = 10000

// Shape says what a node of a listed root is.
type Shape int

const (
	// ShapeLock: a lock's or an election's node, whose contenders are
	// its children.
	ShapeLock Shape = iota
	// ShapeSemaphore: a semaphore's node, with its "leases" and "locks"
	// children.
	ShapeSemaphore
)

// Names lists, in lexical order, the names under root whose nodes have
// contenders now (for ShapeSemaphore: lease nodes or queued acquirers),
// at most limit of them; more reports that the walk stopped early (limit
// names found, or MaxNamesVisited nodes read). A missing root lists none.
func (s *Session) Names(ctx context.Context, root string, shape Shape, limit int) (names []string, more bool, err error) {
	root = strings.TrimSuffix(root, "/")
	level := []string{""} // relative names; "" is the root itself
	visited := 0
	for len(level) > 0 && len(names) < limit {
		if visited+len(level) > MaxNamesVisited {
			level, more = level[:MaxNamesVisited-visited], true
		}
		visited += len(level)
		kids, err := s.childrenOf(ctx, root, level)
		if err != nil {
			return nil, false, err
		}
		var next []string
		for i, rel := range level {
			found, deeper := classify(kids[i], shape)
			if rel != "" && found {
				names = append(names, rel)
			}
			for _, d := range deeper {
				if rel != "" {
					d = rel + "/" + d
				}
				next = append(next, d)
			}
		}
		sort.Strings(next)
		level = next
		if len(level) > 0 && visited >= MaxNamesVisited {
			more = true
			break
		}
	}
	if len(names) > limit {
		names, more = names[:limit], true
	}
	if len(names) == limit && len(level) > 0 {
		more = true
	}
	sort.Strings(names)
	return names, more, nil
}

// classify says whether a node with children kids is a name of shape, and
// which children may hold further names.
func classify(kids []string, shape Shape) (found bool, deeper []string) {
	for _, k := range kids {
		switch {
		case shape == ShapeSemaphore && (k == semLeases || k == semLocks):
			found = true
		case shape == ShapeLock && isContender(k):
			found = true
		case ValidateName(k) == nil:
			deeper = append(deeper, k)
		}
	}
	return found, deeper
}

func isContender(name string) bool {
	_, ok := parseContender(name)
	return ok
}

// childrenOf reads the children of root/rel for every rel, queueReads at a
// time; a node gone meanwhile has none.
func (s *Session) childrenOf(ctx context.Context, root string, rels []string) ([][]string, error) {
	out := make([][]string, len(rels))
	errs := make([]error, len(rels))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(queueReads, len(rels)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				p := root
				if rels[i] != "" {
					p = root + "/" + rels[i]
				}
				if p == "" {
					p = "/"
				}
				out[i], _, errs[i] = s.readChildren(ctx, p)
			}
		}()
	}
	for i := range rels {
		next <- i
	}
	close(next)
	wg.Wait()
	return out, errors.Join(errs...)
}
