package io.koordletyarn.yarnpeer;

import java.io.File;
import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.yarn.api.protocolrecords.AllocateResponse;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.PreemptionMessage;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.NMClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * A small ApplicationMaster for the real-YARN tests, on AMRMClient and
 * NMClient. Its one argument is a spec file, a container a line:
 * "MB VCORES REPLACE COMMAND…" (REPLACE true: a container that completes
 * with a non-zero exit status is asked for again, as MapReduce and Spark
 * ask for a failed or preempted task's container). It appends what
 * happens to SPEC.events, a line each: "registered", "launched CID INDEX",
 * "completed CID STATE EXIT DIAGNOSTICS", "replacement CID INDEX",
 * "preemption-message CIDS". It unregisters (SUCCEEDED) when SPEC.finish
 * appears.
 */
public final class AM {
  private record Spec(int mb, int vcores, boolean replace, String command) {
  }

  public static void main(String[] args) throws Exception {
    File specFile = new File(args[0]);
    List<Spec> specs = new ArrayList<>();
    for (String line : Files.readAllLines(specFile.toPath(), StandardCharsets.UTF_8)) {
      String[] f = line.trim().split("\\s+", 4);
      if (f.length == 4) {
        specs.add(new Spec(Integer.parseInt(f[0]), Integer.parseInt(f[1]), Boolean.parseBoolean(f[2]), f[3]));
      }
    }
    File finish = new File(args[0] + ".finish");
    try (PrintWriter ev = new PrintWriter(new FileWriter(args[0] + ".events", StandardCharsets.UTF_8, true), true)) {
      run(specs, finish, ev);
    }
  }

  private static void run(List<Spec> specs, File finish, PrintWriter ev) throws Exception {
    YarnConfiguration conf = new YarnConfiguration();
    AMRMClient<ContainerRequest> rm = AMRMClient.createAMRMClient();
    rm.init(conf);
    rm.start();
    rm.registerApplicationMaster("", 0, "");
    ev.println("registered");
    NMClient nm = NMClient.createNMClient();
    nm.init(conf);
    nm.start();

    // Priority i+1 asks for spec i: an allocation says which spec it is for.
    Map<Integer, Integer> pending = new HashMap<>();
    for (int i = 0; i < specs.size(); i++) {
      request(rm, specs.get(i), i, pending);
    }
    Map<String, Integer> running = new HashMap<>();
    while (!finish.exists()) {
      AllocateResponse r = rm.allocate(0.5f);
      for (Container c : r.getAllocatedContainers()) {
        int i = c.getPriority().getPriority() - 1;
        Integer want = pending.get(i);
        if (i < 0 || i >= specs.size() || want == null || want == 0) {
          rm.releaseAssignedContainer(c.getId());
          continue;
        }
        pending.put(i, want - 1);
        Spec s = specs.get(i);
        rm.removeContainerRequest(new ContainerRequest(Resource.newInstance(s.mb(), s.vcores()), null, null,
            Priority.newInstance(i + 1)));
        ContainerLaunchContext ctx = ContainerLaunchContext.newInstance(null, new HashMap<>(),
            List.of(s.command() + " 1><LOG_DIR>/stdout 2><LOG_DIR>/stderr"), null, null, null);
        try {
          nm.startContainer(c, ctx);
          running.put(c.getId().toString(), i);
          ev.println("launched " + c.getId() + " " + i);
        } catch (Exception e) {
          ev.println("launch-failed " + c.getId() + " " + i + " " + Peer.oneLine(e.toString()));
        }
      }
      for (ContainerStatus st : r.getCompletedContainersStatuses()) {
        String id = st.getContainerId().toString();
        ev.println("completed " + id + " " + st.getState() + " " + st.getExitStatus() + " "
            + Peer.oneLine(st.getDiagnostics()));
        Integer i = running.remove(id);
        if (i != null && st.getExitStatus() != 0 && specs.get(i).replace()) {
          request(rm, specs.get(i), i, pending);
          ev.println("replacement " + id + " " + i);
        }
      }
      PreemptionMessage pm = r.getPreemptionMessage();
      if (pm != null && pm.getStrictContract() != null) {
        ev.println("preemption-message " + pm.getStrictContract().getContainers());
      } else if (pm != null && pm.getContract() != null) {
        ev.println("preemption-message " + pm.getContract().getContainers());
      }
      Thread.sleep(250);
    }
    rm.unregisterApplicationMaster(FinalApplicationStatus.SUCCEEDED, "finished", "");
    ev.println("unregistered");
  }

  private static void request(AMRMClient<ContainerRequest> rm, Spec s, int i, Map<Integer, Integer> pending)
      throws IOException {
    rm.addContainerRequest(new ContainerRequest(Resource.newInstance(s.mb(), s.vcores()), null, null,
        Priority.newInstance(i + 1)));
    pending.merge(i, 1, Integer::sum);
  }
}
