package zklock

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// countingConn counts the reads that reach the connection itself.
type countingConn struct {
	net.Conn
	reads *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	c.reads.Add(1)
	return c.Conn.Read(p)
}

// framedServer accepts one connection and writes n answers framed as
// ZooKeeper frames them (a 4-byte length, then the body), all at once; the
// channel closes once that write has returned (on loopback, the bytes are
// then in the client's receive buffer).
func framedServer(t *testing.T, n int, body []byte) (string, <-chan struct{}) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var out []byte
	for range n {
		out = binary.BigEndian.AppendUint32(out, uint32(len(body)))
		out = append(out, body...)
	}
	written := make(chan struct{})
	go func() { // ends when the client closes, or with the listener
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.Write(out)
		close(written)
		io.Copy(io.Discard, c)
	}()
	return l.Addr().String(), written
}

// readFrames reads n frames as go-zookeeper does: the length, then the body.
func readFrames(t *testing.T, c net.Conn, n int) {
	t.Helper()
	buf := make([]byte, 64)
	for i := range n {
		if _, err := io.ReadFull(c, buf[:4]); err != nil {
			t.Fatalf("frame %d: length: %v", i, err)
		}
		blen := binary.BigEndian.Uint32(buf[:4])
		if _, err := io.ReadFull(c, buf[:blen]); err != nil {
			t.Fatalf("frame %d: body: %v", i, err)
		}
	}
}

// A burst of answers that has arrived is read from the connection in one
// call, not two per answer; without the buffer it takes two per answer.
func TestBufferedDialerReadsABurstInOneCall(t *testing.T) {
	const answers = 8
	body := make([]byte, 40)
	for _, buffered := range []bool{true, false} {
		var reads atomic.Int64
		counting := zk.Dialer(func(network, addr string, timeout time.Duration) (net.Conn, error) {
			c, err := net.DialTimeout(network, addr, timeout)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, reads: &reads}, nil
		})
		d := counting
		if buffered {
			d = bufferedDialer(counting)
		}
		addr, written := framedServer(t, answers, body)
		c, err := d("tcp", addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		<-written // the whole burst has arrived before the first read
		readFrames(t, c, answers)
		c.Close()
		got := reads.Load()
		if buffered && got != 1 {
			t.Errorf("buffered: %d answers took %d reads of the connection, want 1", answers, got)
		}
		if !buffered && got < 2*answers {
			t.Errorf("control, unbuffered: %d answers took %d reads, want at least %d (two per answer)", answers, got, 2*answers)
		}
	}
}

// A read that finds the buffer empty waits under the connection's read
// deadline, as go-zookeeper's recvLoop relies on to notice a silent server.
func TestBufferedConnKeepsTheReadDeadline(t *testing.T) {
	addr, _ := framedServer(t, 1, []byte("answer"))
	c, err := bufferedDialer(net.DialTimeout)("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	readFrames(t, c, 1)
	if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err = c.Read(make([]byte, 4))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline of a silent server: %v, want a deadline error", err)
	}
}

// BenchmarkReadBufferCPU measures the CPU a cycle costs this process (the
// library, go-zookeeper and the callers: in process, as a library is used)
// with the connection read through a buffer and without, in alternating
// rounds on one shared server: one session, 16 callers each cycling a lock
// of its own, as a daemon serves its clients. It reports both figures and
// their ratio (buffered/plain: below 1, the buffer saves CPU), and each
// side's cycles per second.
func BenchmarkReadBufferCPU(b *testing.B) {
	const workers, rounds = 16, 6
	servers := shared.Get(b).Servers()
	type side struct {
		name  string
		s     *Session
		ms    []*Mutex
		cpu   time.Duration
		wall  time.Duration
		count int
	}
	sides := []*side{{name: "plain"}, {name: "buffered"}}
	for _, sd := range sides {
		sd.s = dial(b, servers, Options{plainReads: sd.name == "plain"})
		for w := range workers {
			sd.ms = append(sd.ms, mutex(b, sd.s, fmt.Sprintf("bench/readbuf-%s-%d", sd.name, w)))
		}
	}
	per := max(b.N/rounds/workers, 1)
	b.ResetTimer()
	for range rounds {
		for _, sd := range sides {
			var wg sync.WaitGroup
			var (
				failMu sync.Mutex
				failed error
			)
			cpu0, start := processCPU(b), time.Now()
			for _, m := range sd.ms {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						g, err := m.Acquire(context.Background())
						if err == nil {
							err = g.Release(context.Background())
						}
						if err != nil {
							failMu.Lock()
							failed = err
							failMu.Unlock()
							return
						}
					}
				}()
			}
			wg.Wait()
			if failed != nil { // every worker has ended
				b.Fatal(failed)
			}
			sd.cpu += processCPU(b) - cpu0
			sd.wall += time.Since(start)
			sd.count += per * workers
		}
	}
	b.StopTimer()
	cpuPer := func(sd *side) float64 { return float64(sd.cpu.Microseconds()) / float64(sd.count) }
	for _, sd := range sides {
		b.ReportMetric(cpuPer(sd), sd.name+"-cpu-µs/cycle")
		b.ReportMetric(float64(sd.count)/sd.wall.Seconds(), sd.name+"-cycles/s")
	}
	b.ReportMetric(cpuPer(sides[1])/cpuPer(sides[0]), "cpu-ratio")
}

// processCPU is the user and system CPU this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
