/**
 * The resource side of fencing: a fencing token protects nothing until the resource refuses the
 * stale one. {@link dev.seqd.fence.JdbcFence} runs fenced transactions on PostgreSQL and
 * MariaDB/MySQL through plain JDBC, {@link dev.seqd.fence.RedisFence} runs fenced Redis commands
 * through the Redis client you already have (one method: evaluate a script), each with the check
 * and the write in one atomic step inside the database. {@link dev.seqd.fence.Sequencer} reads
 * sequencers, {@link dev.seqd.fence.Guard} checks that one is of the lock that guards the data,
 * and {@link dev.seqd.fence.Verifier} checks signed sequencers (Ed25519, the JDK's JCA). No
 * dependency: the JDBC driver is the application's.
 */
package dev.seqd.fence;
