package store

// batchesOf splits a log into its head, the bytes before the batches of
// writes (the header and the snapshot batch the log was created or
// compacted with), and the spans of the batches after it, each from its
// first record through its seal.
func batchesOf(data []byte) (head []byte, batches []span) {
	start := -1
	for _, r := range scanLog(data).recs {
		switch {
		case r.r.kind == kindHeader:
		case r.r.kind == kindSeal || r.r.kind == kindCommit:
			if start < 0 {
				start = r.off
			}
			batches = append(batches, span{start, r.off + r.n - start})
			start = -1
		case start < 0:
			start = r.off
		}
	}
	if len(batches) > 0 && scanLog(data).recs[0].r.kind == kindHeader {
		head, batches = data[:batches[0].off+batches[0].n], batches[1:]
	}
	return head, batches
}
