package io.koordletyarn.sparkjob;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * The real-YARN tests' Spark job: {@code HoldAndSleep <partitions> <mib>
 * <seconds>}. One stage of {@code partitions} tasks; each task allocates
 * and touches {@code mib} MiB of heap, keeps it in a static list (the
 * executor's memory stays real after the task, until its next task
 * replaces it: an executor holds one task's MiB, whichever number of
 * tasks it runs) and sleeps {@code seconds} s. The driver collects the
 * tasks' results (their partition and executor) and prints them.
 */
public final class HoldAndSleep {
  /** What the tasks of this executor JVM hold. */
  private static final List<byte[]> HELD = new ArrayList<>();

  private HoldAndSleep() {}

  static synchronized void hold(int mib) {
    // The previous task's holding first (a re-run task on an executor
    // that ran another must not need twice the heap: Spark kills an
    // executor on OutOfMemoryError, exit 143).
    HELD.clear();
    for (int i = 0; i < mib; i++) {
      byte[] b = new byte[1 << 20];
      for (int j = 0; j < b.length; j += 4096) {
        b[j] = 1;
      }
      HELD.add(b);
    }
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: HoldAndSleep <partitions> <mib> <seconds>");
      System.exit(2);
    }
    int partitions = Integer.parseInt(args[0]);
    int mib = Integer.parseInt(args[1]);
    long seconds = Long.parseLong(args[2]);
    SparkConf conf = new SparkConf().setAppName("HoldAndSleep");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      List<Integer> parts = new ArrayList<>();
      for (int i = 0; i < partitions; i++) {
        parts.add(i);
      }
      List<String> done = sc.parallelize(parts, partitions).map(p -> {
        hold(mib);
        Thread.sleep(seconds * 1000);
        return p + "@" + org.apache.spark.SparkEnv.get().executorId();
      }).collect();
      System.out.println("HoldAndSleep done: " + done);
    }
  }
}
