// Command importer is a program of a module of its own that uses seqd as a
// library: a zklock Mutex straight on ZooKeeper, and a lease of the same
// lock from a seqd daemon through package client. It prints each grant's
// token and waits for a line on standard input before going on, so that
// whoever runs it can look at ZooKeeper while the grant is held.
//
//	importer -zk HOST:PORT[,…] -addr http://127.0.0.1:7070 -name LOCK
//
// Lines printed:
//
//	mutex TOKEN PATH       the zklock grant and its contender node
//	refused held           the daemon's try-once acquire while the mutex holds
//	lease TOKEN SEQUENCER  the daemon's grant, after the mutex was released
//	released
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/seqd/seqd/api"
	"github.com/seqd/seqd/client"
	"github.com/seqd/seqd/zklock"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "importer:", err)
		os.Exit(1)
	}
}

func run() error {
	servers := flag.String("zk", "", "ZooKeeper servers, comma-separated")
	addr := flag.String("addr", "", "the daemon's base URL")
	name := flag.String("name", "", "lock name")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	in := bufio.NewScanner(os.Stdin)
	goOn := func() error {
		if !in.Scan() {
			return errors.New("standard input closed")
		}
		return nil
	}

	sess, err := zklock.Dial(ctx, strings.Split(*servers, ","), zklock.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		return err
	}
	defer sess.Close()
	m, err := zklock.NewMutex(sess, *name)
	if err != nil {
		return err
	}
	g, err := m.Acquire(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("mutex %d %s\n", g.Token, g.Path)
	if err := goOn(); err != nil {
		return err
	}

	c, err := client.New(*addr, client.WithoutEnv(), client.WithDefaultOwner("importer"))
	if err != nil {
		return err
	}
	// The daemon's locks and zklock's are the same ZooKeeper nodes.
	if l, err := c.Acquire(ctx, *name, client.Wait(0)); !errors.Is(err, api.ErrHeld) {
		return fmt.Errorf("daemon acquire while the mutex holds: lease %+v, error %v; want an error matching ErrHeld", l, err)
	}
	fmt.Println("refused held")
	if err := g.Release(ctx); err != nil {
		return err
	}
	l, err := c.Acquire(ctx, *name, client.TTL(30*time.Second), client.Wait(30*time.Second))
	if err != nil {
		return err
	}
	fmt.Printf("lease %d %s\n", l.Token, l.Sequencer)
	if err := goOn(); err != nil {
		return err
	}
	if err := c.Release(ctx, l); err != nil {
		return err
	}
	fmt.Println("released")
	return nil
}
