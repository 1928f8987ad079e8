package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/seqd/seqd/testenv"
)

// Etcd is a single-member etcd started for a run: Debian's etcd-server,
// on loopback, with its data in a temporary directory, and optionally a
// delay proxy in front of its client port (the one seqd bench puts in
// front of ZooKeeper).
type Etcd struct {
	// Endpoints are what clients dial: the proxy's address when there is
	// one.
	Endpoints []string
	PID       int
	// RTTMeasured is what the proxy was seen to add to a round trip.
	RTTMeasured time.Duration

	cmd   *exec.Cmd
	dir   string
	proxy *testenv.Proxy
	log   bytes.Buffer
	done  chan struct{}
}

// etcdBinary is the etcd server to run: $ETCD, or etcd on the PATH.
func etcdBinary() (string, error) {
	if p := os.Getenv("ETCD"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("etcd")
	if err != nil {
		return "", errors.New("no etcd on the PATH: install Debian's etcd-server (scripts/deps.sh etcd) or set ETCD to the binary")
	}
	return p, nil
}

// StartEtcd starts etcd and waits until it answers; rtt > 0 puts the delay
// proxy in front of it.
func StartEtcd(ctx context.Context, rtt time.Duration) (*Etcd, error) {
	bin, err := etcdBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "etcdbench-")
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	e := &Etcd{dir: dir, done: make(chan struct{})}
	e.cmd = exec.Command(bin,
		"--name", "bench", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "bench="+peer, "--log-level", "error")
	e.cmd.Stdout, e.cmd.Stderr = &e.log, &e.log
	if err := e.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start etcd: %w", err)
	}
	go func() { e.cmd.Wait(); close(e.done) }()
	e.PID = e.cmd.Process.Pid
	e.Endpoints = []string{client}
	if err := e.waitReady(ctx); err != nil {
		e.Stop()
		return nil, err
	}
	if rtt > 0 {
		e.proxy = testenv.NewProxy("etcd")
		addr, err := e.proxy.Forward(client[len("http://"):])
		if err != nil {
			e.Stop()
			return nil, err
		}
		e.proxy.DelayOneWay(testenv.ToTarget, rtt)
		e.RTTMeasured = addedRTT(addr, client[len("http://"):])
		e.Endpoints = []string{"http://" + addr}
	}
	return e, nil
}

// waitReady waits until etcd answers a read.
func (e *Etcd) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-e.done:
			return fmt.Errorf("etcd exited at start: %s", bytes.TrimSpace(e.log.Bytes()))
		default:
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: e.Endpoints, DialTimeout: time.Second, Logger: zap.NewNop()})
		if err == nil {
			rctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err = cli.Get(rctx, "ready")
			cancel()
			cli.Close()
			if err == nil {
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd did not answer within 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Stop ends etcd and removes its data.
func (e *Etcd) Stop() {
	if e.proxy != nil {
		e.proxy.Close()
	}
	if e.cmd.Process != nil {
		e.cmd.Process.Kill()
		<-e.done
	}
	os.RemoveAll(e.dir)
}

// freePorts finds n loopback ports free now.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// addedRTT is what the proxy at via adds to a round trip with etcd at
// direct, probed with bytes that are no HTTP/2 preface, which etcd answers
// by closing the connection.
func addedRTT(via, direct string) time.Duration {
	return testenv.AddedRTT(via, direct, func(addr string) error {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Second))
		if _, err := c.Write([]byte("x\r\n\r\n")); err != nil {
			return err
		}
		if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	})
}
