package api

// Family is the part of the API a lease belongs to: its URL's second
// segment.
type Family string

// The families of leases.
const (
	Locks      Family = "locks"      // exclusive and shared locks
	Semaphores Family = "semaphores" // slots of semaphores
	Elections  Family = "elections"  // leaderships
	MultiLocks Family = "multilocks" // several exclusive locks at once
)

// Family is the family l was granted in: an election's lease has a term, a
// semaphore's a limit.
func (l Lease) Family() Family {
	switch {
	case l.Term != 0:
		return Elections
	case l.Limit != 0:
		return Semaphores
	}
	return Locks
}
