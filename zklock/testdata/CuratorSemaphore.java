import java.io.*;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.*;
import org.apache.curator.framework.recipes.locks.*;
import org.apache.curator.retry.RetryOneTime;

// Curator's InterProcessSemaphoreV2 on a path, driven by lines on stdin:
// "try MS" acquires a lease waiting up to MS milliseconds and prints true or
// false; "release" gives the lease back and prints released.
// Usage: java -cp <curator jars> CuratorSemaphore.java HOSTS PATH LIMIT
public class CuratorSemaphore {
  public static void main(String[] a) throws Exception {
    CuratorFramework c = CuratorFrameworkFactory.newClient(a[0], new RetryOneTime(100));
    c.start();
    InterProcessSemaphoreV2 s = new InterProcessSemaphoreV2(c, a[1], Integer.parseInt(a[2]));
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    Lease l = null;
    for (String line; (line = in.readLine()) != null; ) {
      if (line.startsWith("try")) { l = s.acquire(Long.parseLong(line.substring(4)), TimeUnit.MILLISECONDS); System.out.println(l != null); }
      else if (line.equals("release")) { l.close(); l = null; System.out.println("released"); }
      System.out.flush();
    }
    c.close();
  }
}
