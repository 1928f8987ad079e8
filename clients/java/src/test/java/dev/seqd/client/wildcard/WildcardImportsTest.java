package dev.seqd.client.wildcard;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import dev.seqd.client.*;
import dev.seqd.fence.*;
import org.junit.jupiter.api.Test;

/**
 * A program that imports both packages whole compiles: no simple name is in both, so that a
 * resource that is also a client (it takes leases and fences writes) may write {@code catch
 * (StaleTokenException e)} and mean the fence's.
 */
class WildcardImportsTest {
    @Test
    void bothPackagesImportWhole() {
        assertEquals("dev.seqd.fence.StaleTokenException", StaleTokenException.class.getName());
        assertNotEquals(StaleTokenException.class, SeqdException.class);
        assertEquals("dev.seqd.client.HeldException", HeldException.class.getName());
    }
}
