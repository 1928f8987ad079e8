package dev.seqd.client;

import java.time.Duration;

/** Run in a child JVM by SecureIT: takes a lock with a Client configured by the environment alone. */
public final class EnvProbe {
    private EnvProbe() {}

    public static void main(String[] args) {
        try (Client c = new Client(); Lease l = c.lock(args[0], Duration.ofSeconds(2), Duration.ofSeconds(5))) {
            CheckResult r = c.check(l.sequencer());
            System.out.println("addr=" + c.addr() + " token=" + Long.toUnsignedString(l.token()) + " valid=" + r.valid());
        } catch (SeqdException e) {
            System.out.println("error status=" + e.status() + " code=" + e.code() + ": " + e.getMessage());
            System.exit(2);
        }
    }
}
