package io.koordletyarn.yarnpeer;

import java.nio.ByteBuffer;

import org.apache.hadoop.yarn.server.api.ApplicationInitializationContext;
import org.apache.hadoop.yarn.server.api.ApplicationTerminationContext;
import org.apache.hadoop.yarn.server.api.AuxiliaryService;

/**
 * The NodeManager's "mapreduce_shuffle" auxiliary service for map-only
 * MapReduce jobs: the MRAppMaster names it in every task container's
 * launch context, and the NodeManager refuses a container whose auxiliary
 * service it does not run (nor one whose metadata is null). A map-only job
 * never shuffles, so this one serves nothing: its metadata is the port
 * ShuffleHandler would give (a big-endian int), 0. Jobs with reduces need
 * Hadoop's ShuffleHandler, which the shaded minicluster does not carry.
 */
public final class NoShuffle extends AuxiliaryService {
  public NoShuffle() {
    super("mapreduce_shuffle");
  }

  @Override
  public void initializeApplication(ApplicationInitializationContext ctx) {
  }

  @Override
  public void stopApplication(ApplicationTerminationContext ctx) {
  }

  @Override
  public ByteBuffer getMetaData() {
    return ByteBuffer.allocate(4).putInt(0, 0);
  }
}
