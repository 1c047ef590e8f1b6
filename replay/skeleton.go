package replay

import (
	"errors"
	"fmt"

	"github.com/tapedeck/tapedeck/tape"
)

// ErrSkeleton says a tape holds skeleton records (tape.MetaSkeleton): an
// import of trace spans without the messages' bodies, which no client
// could be served from.
var ErrSkeleton = errors.New("the tape is a skeleton")

// refuseSkeleton reads the first request of server in [lo, hi): a tape
// whose requests are skeletons is refused. It reads one message body.
func refuseSkeleton(x *tape.Index, server string, lo, hi int) error {
	for i := lo; i < hi; i++ {
		e := x.Entry(i)
		if e.Kind != tape.KindRequest || e.Server != server {
			continue
		}
		m, err := x.Message(i)
		if err != nil {
			return err
		}
		if tape.Skeleton(m.Raw) {
			return fmt.Errorf("%w: its messages were rebuilt from trace spans without bodies (_meta.skeleton on line %d), "+
				"so it holds each call's method, target, id, status and time but not the messages a client needs; "+
				"stats, open, check and diff read it; to replay, export the traces with --with-bodies", ErrSkeleton, e.Line)
		}
		return nil
	}
	return nil
}
