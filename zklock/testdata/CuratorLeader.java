import java.io.BufferedReader;
import java.io.InputStreamReader;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.retry.RetryOneTime;

/**
 * A Curator candidate on a path, for zklock's election interop test.
 *
 * usage: CuratorLeader HOSTS PATH ID
 *
 * Campaigns with a LeaderSelector whose id is ID, prints
 * "leader" once elected, resigns when a line arrives on stdin and prints
 * "resigned".
 */
public class CuratorLeader {
  public static void main(String[] args) throws Exception {
    CuratorFramework c = CuratorFrameworkFactory.newClient(args[0], 10000, 10000, new RetryOneTime(100));
    c.start();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    final Object done = new Object();
    LeaderSelector s = new LeaderSelector(c, args[1], new LeaderSelectorListenerAdapter() {
      public void takeLeadership(CuratorFramework cf) throws Exception {
        System.out.println("leader");
        System.out.flush();
        in.readLine();
        synchronized (done) { done.notify(); }
      }
    });
    s.setId(args[2]);
    synchronized (done) {
      s.start();
      done.wait();
    }
    s.close();
    System.out.println("resigned");
    System.out.flush();
    c.close();
  }
}
