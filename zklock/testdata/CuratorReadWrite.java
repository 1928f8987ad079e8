import java.io.*;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.*;
import org.apache.curator.framework.recipes.locks.*;
import org.apache.curator.retry.RetryOneTime;

// Curator's InterProcessReadWriteLock on a path, driven by lines on stdin:
// "read MS" or "write MS" acquires that side waiting up to MS milliseconds
// and prints true or false; "release" releases what is held and prints
// released.
// Usage: java -cp <curator jars> CuratorReadWrite.java HOSTS PATH
public class CuratorReadWrite {
  public static void main(String[] a) throws Exception {
    CuratorFramework c = CuratorFrameworkFactory.newClient(a[0], new RetryOneTime(100));
    c.start();
    InterProcessReadWriteLock rw = new InterProcessReadWriteLock(c, a[1]);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    InterProcessMutex held = null;
    for (String line; (line = in.readLine()) != null; ) {
      String[] f = line.split(" ");
      if (f[0].equals("read") || f[0].equals("write")) {
        InterProcessMutex m = f[0].equals("read") ? rw.readLock() : rw.writeLock();
        boolean ok = m.acquire(Long.parseLong(f[1]), TimeUnit.MILLISECONDS);
        if (ok) held = m;
        System.out.println(ok);
      } else if (f[0].equals("release")) {
        held.release();
        held = null;
        System.out.println("released");
      }
      System.out.flush();
    }
    c.close();
  }
}
