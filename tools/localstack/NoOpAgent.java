// Stands in for LocalStack's DynamoDB Local loader agent (ddb-local-loader), whose download is
// blocked here. The real agent only lifts DynamoDB Local's limit of 20 GSIs per table; Stepwell
// needs far fewer, so an agent that does nothing lets `-javaagent:` start the JVM unchanged.
import java.lang.instrument.Instrumentation;

public final class NoOpAgent {
    private NoOpAgent() {}

    public static void premain(String agentArgs, Instrumentation instrumentation) {}
}
