package io.koordletyarn.sparkjob;

import java.util.ArrayList;
import java.util.List;

import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/**
 * make measure-jobs' Spark job: {@code DayWork <mode> <partitions> <mib>
 * <seconds>}. One stage of {@code partitions} tasks, each for {@code
 * seconds} s:
 *
 * <ul>
 *   <li>{@code burn}: a CPU-bound task, spinning on its core, holding
 *       {@code mib} MiB of heap;
 *   <li>{@code hold}: holds {@code mib} MiB and sleeps (as HoldAndSleep);
 *   <li>{@code grow}: grows to {@code mib} MiB evenly over its time (the
 *       executor whose memory grows under a running job).
 * </ul>
 *
 * What a task holds stays in its executor until the executor's next task
 * replaces it. The driver prints the tasks' partitions and executors.
 */
public final class DayWork {
  /** What the tasks of this executor JVM hold. */
  private static final List<byte[]> HELD = new ArrayList<>();

  private DayWork() {}

  private static byte[] touched() {
    byte[] b = new byte[1 << 20];
    for (int j = 0; j < b.length; j += 4096) {
      b[j] = 1;
    }
    return b;
  }

  static synchronized void hold(int mib) {
    HELD.clear();
    for (int i = 0; i < mib; i++) {
      HELD.add(touched());
    }
  }

  static synchronized void add() {
    HELD.add(touched());
  }

  static synchronized void release() {
    HELD.clear();
  }

  /** Spins until the deadline; the result keeps the loop from being elided. */
  static long burnUntil(long deadline) {
    long x = 0;
    while (System.nanoTime() < deadline) {
      for (int i = 0; i < 100_000; i++) {
        x = x * 6364136223846793005L + 1442695040888963407L;
      }
    }
    return x;
  }

  static String task(String mode, int p, int mib, long seconds) throws InterruptedException {
    long start = System.nanoTime();
    long deadline = start + seconds * 1_000_000_000L;
    switch (mode) {
      case "burn":
        hold(mib);
        burnUntil(deadline);
        break;
      case "hold":
        hold(mib);
        Thread.sleep(seconds * 1000);
        break;
      case "grow":
        release();
        for (int i = 0; i < mib; i++) {
          long at = start + (long) ((double) (i + 1) / mib * (deadline - start));
          long wait = (at - System.nanoTime()) / 1_000_000L;
          if (wait > 0) {
            Thread.sleep(wait);
          }
          add();
        }
        break;
      default:
        throw new IllegalArgumentException("mode " + mode + ": burn, hold or grow");
    }
    return p + "@" + org.apache.spark.SparkEnv.get().executorId();
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: DayWork <burn|hold|grow> <partitions> <mib> <seconds>");
      System.exit(2);
    }
    String mode = args[0];
    int partitions = Integer.parseInt(args[1]);
    int mib = Integer.parseInt(args[2]);
    long seconds = Long.parseLong(args[3]);
    SparkConf conf = new SparkConf().setAppName("DayWork");
    try (JavaSparkContext sc = new JavaSparkContext(conf)) {
      List<Integer> parts = new ArrayList<>();
      for (int i = 0; i < partitions; i++) {
        parts.add(i);
      }
      List<String> done =
          sc.parallelize(parts, partitions).map(p -> task(mode, p, mib, seconds)).collect();
      System.out.println("DayWork done: " + done);
    }
  }
}
