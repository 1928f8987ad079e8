package zklock

import (
	"context"
	"path"

	"github.com/go-zookeeper/zk"
)

// withSequenceTokens makes a Mutex's tokens its contender's sequence suffix
// + 1. That is not safe (the suffix restarts when the lock node is
// re-created); it exists for the negative control that shows the regression
// guard catching a token that went backwards.
func withSequenceTokens() MutexOption { return sequenceTokens{} }

type sequenceTokens struct{}

func (sequenceTokens) applyMutex(m *Mutex) { m.tokenOf = sequenceToken }

func sequenceToken(_ context.Context, _ *Mutex, own string, _ *zk.Stat) (uint64, error) {
	c, _ := parseContender(path.Base(own))
	return uint64(c.seq) + 1, nil
}
