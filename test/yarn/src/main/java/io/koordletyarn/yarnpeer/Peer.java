package io.koordletyarn.yarnpeer;

import java.io.BufferedReader;
import java.io.File;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.security.PrivilegedExceptionAction;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.NodeReport;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

/**
 * The real-YARN test peer: starts Hadoop's MiniYARNCluster (one
 * ResourceManager, one NodeManager running the LinuxContainerExecutor with
 * its real cgroups handler) and takes commands, a line each, on stdin;
 * answers "ok ..." or "err ..." on stdout, a line each. Its log goes to
 * stderr.
 *
 * <p>Flags (all required but --kind, --memory, --nm-vcores):
 * --kind lce-cgroups|lce|dce (the LinuxContainerExecutor with
 * CgroupsLCEResourcesHandler, the default; without a resources handler; the
 * DefaultContainerExecutor: the last two give containers no cgroups),
 * --executor PATH (the container-executor), --hierarchy H (YARN's cgroup
 * hierarchy), --mount-path P (where the cgroup controllers are mounted),
 * --memory true|false (yarn.nodemanager.resource.memory.enabled),
 * --cgroups-v2 true|false (lce-cgroups: Hadoop 3.5's cgroup v2 handler,
 * yarn.nodemanager.linux-container-executor.cgroups.v2.enabled),
 * --nm-vcores N, --log-retain-seconds S (a finished application's container
 * logs; 0 by default), --classpath CP (the AM's), --am-java-opts and
 * --first-am-java-opts (every AM's and the first AM's extra JVM flags),
 * and any number of --set KEY=VALUE (yarn-site keys, applied last: the
 * harness sets every RM and NM address to a free port of its choosing).
 *
 * --role both|rm (rm: the ResourceManager alone, its NodeManager started
 * apart by NM once the peer answers "configured", before "ready";
 * "wait-node" waits for it to register).
 *
 * <p>Commands: submit NAME QUEUE TYPE TAGS USER SPECFILE (TAGS comma
 * separated or "-"; answers the application id); app APPID (state, final
 * status, queue, AM container); node (node id, total and used memory and
 * vcores at the RM); restart-rm (work-preserving); kill APPID; stop.
 */
public final class Peer {
  private final Map<String, String> flags;
  private MiniYARNCluster cluster;
  /** The NodeManagers in this JVM (0 with --role rm). */
  private int nodeManagers;
  private YarnConfiguration conf;
  private final List<String> sets;
  private final PrintStream out;
  /** The first AM is not launched yet (--first-am-java-opts). */
  private final java.util.concurrent.atomic.AtomicBoolean firstAM = new java.util.concurrent.atomic.AtomicBoolean(true);

  private Peer(Map<String, String> flags, List<String> sets, PrintStream out) {
    this.flags = flags;
    this.sets = sets;
    this.out = out;
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> flags = new HashMap<>();
    List<String> sets = new ArrayList<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      if (args[i].equals("--set")) {
        sets.add(args[i + 1]);
      } else {
        flags.put(args[i].replaceFirst("^--", ""), args[i + 1]);
      }
    }
    for (String f : List.of("executor", "hierarchy", "mount-path", "classpath")) {
      if (!flags.containsKey(f)) {
        System.err.println("yarn-peer: --" + f + " is required");
        System.exit(2);
      }
    }
    // stdout is the protocol: nothing else may print there.
    PrintStream protocol = new PrintStream(new FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);
    System.setOut(System.err);
    Peer p = new Peer(flags, sets, protocol);
    try {
      p.start();
    } catch (Throwable t) {
      t.printStackTrace();
      protocol.println("err start: " + oneLine(t.toString()));
      System.exit(1);
    }
    p.serve();
  }

  static String oneLine(String s) {
    return s == null ? "" : s.replaceAll("[\\r\\n]+", " | ");
  }

  private void start() throws Exception {
    conf = new YarnConfiguration();
    String kind = flags.getOrDefault("kind", "lce-cgroups");
    switch (kind) {
      case "dce" -> conf.set(YarnConfiguration.NM_CONTAINER_EXECUTOR,
          "org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor");
      case "lce", "lce-cgroups" -> {
        conf.set(YarnConfiguration.NM_CONTAINER_EXECUTOR,
            "org.apache.hadoop.yarn.server.nodemanager.LinuxContainerExecutor");
        conf.set(YarnConfiguration.NM_LINUX_CONTAINER_EXECUTOR_PATH, flags.get("executor"));
        conf.setBoolean(YarnConfiguration.NM_NONSECURE_MODE_LIMIT_USERS, false);
      }
      default -> throw new IllegalArgumentException("--kind " + kind + ": one of lce-cgroups, lce, dce");
    }
    if (kind.equals("lce-cgroups")) {
      conf.set(YarnConfiguration.NM_LINUX_CONTAINER_RESOURCES_HANDLER,
          "org.apache.hadoop.yarn.server.nodemanager.util.CgroupsLCEResourcesHandler");
      conf.setBoolean("yarn.nodemanager.resource.memory.enabled", Boolean.parseBoolean(flags.getOrDefault("memory", "false")));
      conf.set(YarnConfiguration.NM_LINUX_CONTAINER_CGROUPS_HIERARCHY, flags.get("hierarchy"));
      conf.setBoolean(YarnConfiguration.NM_LINUX_CONTAINER_CGROUPS_MOUNT, false);
      conf.set(YarnConfiguration.NM_LINUX_CONTAINER_CGROUPS_MOUNT_PATH, flags.get("mount-path"));
      // Hadoop 3.5's own v2 handler (the key is unknown to 3.3, which has
      // none); its mount path is cgroups.mount-path above.
      if (Boolean.parseBoolean(flags.getOrDefault("cgroups-v2", "false"))) {
        conf.setBoolean("yarn.nodemanager.linux-container-executor.cgroups.v2.enabled", true);
      }
    }
    conf.setInt(YarnConfiguration.NM_VCORES, Integer.parseInt(flags.getOrDefault("nm-vcores", "8")));
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    // A finished application's container logs are deleted at once (the
    // NonAggregatingLogHandler): until they are, the NM holds the
    // application, and its stop waits for it (6 s) and for the deletion's
    // scheduler (10 s). --log-retain-seconds keeps them (for debugging).
    conf.setLong(YarnConfiguration.NM_LOG_RETAIN_SECONDS, Long.parseLong(flags.getOrDefault("log-retain-seconds", "0")));
    conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
    // The RM's addresses as the harness chose them (free ports): a
    // restarted RM comes back where koordlet and the AM look for it. The
    // NodeManager's are the MiniYARNCluster's own choice (it sets its RPC,
    // localizer and web ports to 0 and its memory to 4096 MB whatever the
    // configuration says): its web port is in the ready line.
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, true);
    conf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_USE_RPC, true);
    // Work-preserving recovery, so that an RM restart keeps the running
    // containers and new ones carry the next epoch.
    File state = new File("rm-state").getAbsoluteFile();
    conf.setBoolean(YarnConfiguration.RECOVERY_ENABLED, true);
    conf.setBoolean(YarnConfiguration.RM_WORK_PRESERVING_RECOVERY_ENABLED, true);
    conf.set(YarnConfiguration.RM_STORE,
        "org.apache.hadoop.yarn.server.resourcemanager.recovery.FileSystemRMStateStore");
    conf.set(YarnConfiguration.FS_RM_STATE_STORE_URI, state.toURI().toString());
    // No NodeManager recovery: its state store is leveldb, which the
    // shaded minicluster jars do not carry (NoClassDefFoundError); an RM
    // restart needs none (the NM resyncs and re-registers).
    // Vcores count in scheduling (the CapacityScheduler's default
    // calculator allocates every container 1 vcore whatever it asks for),
    // as on clusters that isolate CPU.
    conf.set("yarn.scheduler.capacity.resource-calculator",
        "org.apache.hadoop.yarn.util.resource.DominantResourceCalculator");
    // Room for several AMs on the one small node (the default 10% of
    // 4096 MB takes one).
    conf.set("yarn.scheduler.capacity.maximum-am-resource-percent", "0.5");
    conf.set("yarn.scheduler.capacity.root.queues", "default,etl,transcode");
    conf.set("yarn.scheduler.capacity.root.default.capacity", "40");
    conf.set("yarn.scheduler.capacity.root.etl.capacity", "30");
    conf.set("yarn.scheduler.capacity.root.transcode.capacity", "30");
    for (String q : List.of("default", "etl", "transcode")) {
      conf.set("yarn.scheduler.capacity.root." + q + ".maximum-capacity", "100");
      conf.set("yarn.scheduler.capacity.root." + q + ".user-limit-factor", "10");
    }
    conf.setBoolean("yarn.scheduler.capacity.root.acl_submit_applications", true);
    // The RM notices an NM within a second (tests wait on it).
    conf.setLong(YarnConfiguration.RM_NM_HEARTBEAT_INTERVAL_MS, 500);
    conf.setLong("yarn.am.liveness-monitor.expiry-interval-ms", 60000);
    // MapReduce's task containers name the shuffle service (map-only jobs
    // here: NoShuffle).
    conf.set("yarn.nodemanager.aux-services", "mapreduce_shuffle");
    conf.set("yarn.nodemanager.aux-services.mapreduce_shuffle.class", NoShuffle.class.getName());
    for (String kv : sets) {
      int eq = kv.indexOf('=');
      conf.set(kv.substring(0, eq), kv.substring(eq + 1));
    }
    // --role rm: the ResourceManager alone; the NodeManager runs in a JVM
    // of its own (NM) and joins it.
    boolean rmOnly = flags.getOrDefault("role", "both").equals("rm");
    nodeManagers = rmOnly ? 0 : 1;
    cluster = new MiniYARNCluster("koordlet-yarn", 1, nodeManagers, 1, 1);
    cluster.init(conf);
    if (rmOnly) {
      // The NodeManager's configuration before the RM starts (every
      // address is fixed by --set): its JVM starts beside the RM's, so
      // the two starts overlap (not measured apart from the rest).
      conf = new YarnConfiguration(cluster.getConfig());
      writeClientConf();
      out.println("configured");
      cluster.start();
      conf = new YarnConfiguration(cluster.getConfig());
      writeClientConf();
      out.println("ready rm-web=" + conf.get(YarnConfiguration.RM_WEBAPP_ADDRESS)
          + " pid=" + ProcessHandle.current().pid());
      return;
    }
    cluster.start();
    waitForNode();
    conf = new YarnConfiguration(cluster.getConfig());
    writeClientConf();
    out.println("ready rm-web=" + conf.get(YarnConfiguration.RM_WEBAPP_ADDRESS)
        + " nm-web=127.0.0.1:" + cluster.getNodeManager(0).getNMContext().getHttpPort()
        + " node-id=" + cluster.getNodeManager(0).getNMContext().getNodeId()
        + " pid=" + ProcessHandle.current().pid());
  }

  private void waitForNode() throws Exception {
    for (int i = 0; i < 600; i++) {
      if (cluster.getResourceManager().getRMContext().getRMNodes().size() > 0) {
        return;
      }
      Thread.sleep(100);
    }
    throw new IllegalStateException("the NodeManager did not register with the ResourceManager in 60 s");
  }

  /** Writes the cluster's client configuration for the AM's class path. */
  private void writeClientConf() throws Exception {
    File dir = new File("conf").getAbsoluteFile();
    dir.mkdirs();
    try (OutputStream o = new FileOutputStream(new File(dir, "yarn-site.xml"))) {
      conf.writeXml(o);
    }
  }

  private YarnClient client() {
    YarnClient c = YarnClient.createYarnClient();
    c.init(conf);
    c.start();
    return c;
  }

  private void serve() throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String[] f = line.trim().split("\\s+");
      if (f.length == 0 || f[0].isEmpty()) {
        continue;
      }
      try {
        switch (f[0]) {
          case "submit" -> out.println("ok " + submit(Arrays.copyOfRange(f, 1, f.length)));
          case "app" -> out.println("ok " + app(f[1]));
          case "node" -> out.println("ok " + node());
          case "wait-node" -> {
            waitForNode();
            out.println("ok");
          }
          case "kill" -> {
            try (YarnClient c = client()) {
              c.killApplication(ApplicationId.fromString(f[1]));
            }
            out.println("ok");
          }
          case "restart-rm" -> {
            cluster.getResourceManager().stop();
            cluster.restartResourceManager(0);
            waitForNode();
            conf = new YarnConfiguration(cluster.getConfig());
            writeClientConf();
            out.println("ok rm-web=" + conf.get(YarnConfiguration.RM_WEBAPP_ADDRESS));
          }
          case "stop" -> {
            // The NM (its containers killed), then the RM, each stopped
            // itself: MiniYARNCluster's stop waits 5 s for AMs that never
            // unregistered (a killed application's).
            if (nodeManagers > 0) {
              cluster.getNodeManager(0).stop();
            }
            cluster.getResourceManager().stop();
            out.println("ok");
            System.exit(0);
          }
          default -> out.println("err unknown command " + f[0]);
        }
      } catch (Throwable t) {
        t.printStackTrace();
        out.println("err " + oneLine(t.toString()));
      }
    }
    cluster.stop();
  }

  private String submit(String[] a) throws Exception {
    if (a.length != 6) {
      throw new IllegalArgumentException("submit NAME QUEUE TYPE TAGS USER SPECFILE");
    }
    String name = a[0], queue = a[1], type = a[2], tags = a[3], user = a[4], spec = a[5];
    UserGroupInformation ugi = UserGroupInformation.createRemoteUser(user);
    return ugi.doAs((PrivilegedExceptionAction<String>) () -> {
      try (YarnClient c = client()) {
        YarnClientApplication app = c.createApplication();
        ApplicationSubmissionContext ctx = app.getApplicationSubmissionContext();
        ctx.setApplicationName(name);
        ctx.setQueue(queue);
        ctx.setApplicationType(type);
        if (!tags.equals("-")) {
          ctx.setApplicationTags(new HashSet<>(Arrays.asList(tags.split(","))));
        }
        ctx.setResource(Resource.newInstance(256, 1));
        ctx.setKeepContainersAcrossApplicationAttempts(true);
        String java = System.getProperty("java.home") + "/bin/java";
        List<String> cmd = new ArrayList<>();
        cmd.add("exec " + java + " -Xmx64m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dlog4j.configuration=log4j.properties"
            + opens() + amJavaOpts()
            + " -cp '" + flags.get("classpath") + "' io.koordletyarn.yarnpeer.AM " + spec
            + " 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr");
        Map<String, String> env = new HashMap<>();
        ctx.setAMContainerSpec(ContainerLaunchContext.newInstance(null, env, cmd, null, null, null));
        return c.submitApplication(ctx).toString();
      }
    });
  }

  /**
   * The AM JVM's extra flags: --am-java-opts for every AM, and
   * --first-am-java-opts for the first this peer launches (the harness's
   * class-data sharing: an archive every AM maps, or the class list the
   * first writes).
   */
  private String amJavaOpts() {
    String o = flags.getOrDefault("am-java-opts", "");
    if (firstAM.getAndSet(false)) {
      o += " " + flags.getOrDefault("first-am-java-opts", "");
    }
    return o.isBlank() ? "" : " " + o.trim();
  }

  /** This JVM's --add-opens flags (Hadoop 3.3 needs them on Java 17), for the AM's JVM. */
  static String opens() {
    StringBuilder b = new StringBuilder();
    for (String a : java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (a.startsWith("--add-opens")) {
        b.append(' ').append(a);
      }
    }
    return b.toString();
  }

  private String app(String id) throws Exception {
    try (YarnClient c = client()) {
      ApplicationReport r = c.getApplicationReport(ApplicationId.fromString(id));
      String am = "-";
      if (r.getCurrentApplicationAttemptId() != null) {
        var att = c.getApplicationAttemptReport(r.getCurrentApplicationAttemptId());
        if (att.getAMContainerId() != null) {
          am = att.getAMContainerId().toString();
        }
      }
      return r.getYarnApplicationState() + " " + r.getFinalApplicationStatus() + " " + r.getQueue() + " " + am;
    }
  }

  private String node() throws Exception {
    try (YarnClient c = client()) {
      List<NodeReport> ns = c.getNodeReports();
      if (ns.isEmpty()) {
        return "-";
      }
      NodeReport n = ns.get(0);
      Resource cap = n.getCapability(), used = n.getUsed();
      return n.getNodeId() + " " + cap.getMemorySize() + " " + cap.getVirtualCores() + " "
          + (used == null ? 0 : used.getMemorySize()) + " " + (used == null ? 0 : used.getVirtualCores());
    }
  }
}
