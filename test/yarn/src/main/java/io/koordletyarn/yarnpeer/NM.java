package io.koordletyarn.yarnpeer;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;

/**
 * A NodeManager in a JVM of its own, as deployed (the NodeManager pod),
 * joining the ResourceManager of a peer started with --role rm. Hadoop 3.3
 * serves its web apps through Jersey 1 and a Guice filter whose pipeline is
 * one per JVM: an RM and an NM in one JVM answer both web ports with the
 * last one's, so the RM's REST is not there.
 *
 * <p>Arguments: the RM peer's configuration file (its conf/yarn-site.xml:
 * the RM's addresses and every executor setting), then any number of
 * --set KEY=VALUE. Answers "ready nm-web=HOST:PORT node-id=ID pid=PID" on
 * stdout once the NM runs, then takes "stop".
 */
public final class NM {
  private NM() {
  }

  public static void main(String[] args) throws Exception {
    PrintStream protocol = new PrintStream(new FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    System.setOut(System.err);
    if (args.length < 1) {
      protocol.println("err usage: NM RM-YARN-SITE [--set KEY=VALUE]...");
      System.exit(2);
    }
    List<String> sets = new ArrayList<>();
    for (int i = 1; i + 1 < args.length; i += 2) {
      if (args[i].equals("--set")) {
        sets.add(args[i + 1]);
      }
    }
    NodeManager nm = new NodeManager();
    try {
      Configuration base = new Configuration(false);
      base.addResource(new File(args[0]).toURI().toURL());
      YarnConfiguration conf = new YarnConfiguration(base);
      File local = new File("nm-local").getAbsoluteFile();
      File logs = new File("nm-logs").getAbsoluteFile();
      local.mkdirs();
      logs.mkdirs();
      conf.set(YarnConfiguration.NM_LOCAL_DIRS, local.getPath());
      conf.set(YarnConfiguration.NM_LOG_DIRS, logs.getPath());
      conf.set(YarnConfiguration.NM_ADDRESS, "127.0.0.1:0");
      conf.set(YarnConfiguration.NM_LOCALIZER_ADDRESS, "127.0.0.1:0");
      conf.set(YarnConfiguration.NM_WEBAPP_ADDRESS, "127.0.0.1:0");
      conf.set(YarnConfiguration.NM_COLLECTOR_SERVICE_ADDRESS, "127.0.0.1:0");
      // The MiniYARNCluster's NM: 4096 MB.
      conf.setInt(YarnConfiguration.NM_PMEM_MB, 4096);
      // It starts beside the RM, which may not listen yet: register as
      // soon as it does (the default retry waits 30 s, IPC's 1 s).
      conf.setLong(YarnConfiguration.RESOURCEMANAGER_CONNECT_RETRY_INTERVAL_MS, 250);
      conf.setInt("ipc.client.connect.retry.interval", 250);
      for (String kv : sets) {
        int eq = kv.indexOf('=');
        conf.set(kv.substring(0, eq), kv.substring(eq + 1));
      }
      nm.init(conf);
      nm.start();
      var ctx = nm.getNMContext();
      for (int i = 0; i < 600 && (ctx.getNodeId() == null || ctx.getHttpPort() <= 0); i++) {
        Thread.sleep(100);
      }
      protocol.println("ready nm-web=127.0.0.1:" + ctx.getHttpPort() + " node-id=" + ctx.getNodeId()
          + " pid=" + ProcessHandle.current().pid());
    } catch (Throwable t) {
      t.printStackTrace();
      protocol.println("err start: " + Peer.oneLine(t.toString()));
      System.exit(1);
    }
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.trim().equals("stop")) {
        break;
      }
      protocol.println("err unknown command " + line.trim());
    }
    nm.stop();
    protocol.println("ok");
    System.exit(0);
  }
}
