// A Curator InterProcessMutex on a path, for zklock's interop test.
//
// usage: java -cp curator-recipes.jar CuratorLock.java try|hold HOSTS PATH
//
// try:  one non-blocking attempt; prints true or false (and releases if true).
// hold: waits for the lock, prints "held", waits for a line on stdin,
//       releases and prints "released".
//
// With SEQD_TEST_ZK_AUTH=user:password the client authenticates with that
// digest identity and creates its nodes with digest:user ALL + world:anyone
// READ, as seqd does with the same credentials.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.data.Id;
import org.apache.zookeeper.server.auth.DigestAuthenticationProvider;

public class CuratorLock {
    public static void main(String[] args) throws Exception {
        String mode = args[0], hosts = args[1], path = args[2];
        CuratorFrameworkFactory.Builder b = CuratorFrameworkFactory.builder()
                .connectString(hosts)
                .sessionTimeoutMs(10000)
                .retryPolicy(new RetryNTimes(30, 200));
        String auth = System.getenv("SEQD_TEST_ZK_AUTH");
        if (auth != null && !auth.isEmpty()) {
            final List<ACL> acl = new ArrayList<>();
            acl.add(new ACL(ZooDefs.Perms.ALL, new Id("digest", DigestAuthenticationProvider.generateDigest(auth))));
            acl.add(new ACL(ZooDefs.Perms.READ, new Id("world", "anyone")));
            b.authorization("digest", auth.getBytes("UTF-8")).aclProvider(new ACLProvider() {
                public List<ACL> getDefaultAcl() { return acl; }
                public List<ACL> getAclForPath(String p) { return acl; }
            });
        }
        CuratorFramework client = b.build();
        client.start();
        if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
            System.err.println("no connection to " + hosts);
            System.exit(1);
        }
        try {
            InterProcessMutex lock = new InterProcessMutex(client, path);
            if (mode.equals("try")) {
                boolean got = lock.acquire(0, TimeUnit.SECONDS);
                System.out.println(got);
                System.out.flush();
                if (got) {
                    lock.release();
                }
            } else if (mode.equals("hold")) {
                if (!lock.acquire(60, TimeUnit.SECONDS)) {
                    System.out.println("timeout");
                    System.exit(1);
                }
                System.out.println("held");
                System.out.flush();
                new BufferedReader(new InputStreamReader(System.in)).readLine();
                lock.release();
                System.out.println("released");
                System.out.flush();
            } else {
                System.err.println("unknown mode " + mode);
                System.exit(2);
            }
        } finally {
            client.close();
        }
    }
}
