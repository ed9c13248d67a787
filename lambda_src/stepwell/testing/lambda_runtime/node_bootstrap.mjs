// One warm Node.js Lambda execution environment of the local runtime (worker.py starts it):
//   node node_bootstrap.mjs CODE_DIR HANDLER ANSWER_FD
// It loads the handler once as Lambda's Node.js runtime does (handler "dir/file.export.path": file.js,
// file.mjs, file.cjs, a package's "type", then a module by name) and serves invocations: one JSON request per
// stdin line ({event, request_id, deadline_epoch_ms, function_arn, clock_offset_seconds}), one JSON answer
// per line on ANSWER_FD ({result} or {error: {errorType, errorMessage, trace}}, with ending: true when the
// environment ends with it), after {"ready": true}. The function's stdout and stderr are its log, so answers
// go to a descriptor of their own.
import fs from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";
import { pathToFileURL } from "node:url";
import util from "node:util";

const [codeDir, handlerString, answerFdText] = process.argv.slice(2);
const answerFd = Number(answerFdText);
const require = createRequire(import.meta.url);
const RealDate = Date;
const realNow = () => RealDate.now();

// -- answers --------------------------------------------------------------------------------------------

function send(message) {
  let encoded;
  try {
    encoded = JSON.stringify(message);
  } catch (error) {
    // Lambda cannot send what JSON cannot carry (a cycle, a BigInt): the invocation fails instead.
    encoded = JSON.stringify({
      error: { errorType: "Runtime.MarshalError", errorMessage: `Unable to stringify response body: ${error.message}`, trace: [] },
    });
  }
  const bytes = Buffer.from(encoded + "\n", "utf8");
  let written = 0;
  while (written < bytes.length) {
    written += fs.writeSync(answerFd, bytes, written, bytes.length - written);
  }
}

// An error as Lambda's Node.js runtime reports it (its Errors.toRapidResponse).
function errorObject(error) {
  try {
    if (util.types.isNativeError(error) || (error && typeof error === "object" && typeof error.stack === "string")) {
      return {
        errorType: String(error.name),
        errorMessage: String(error.message),
        trace: String(error.stack).split("\n"),
      };
    }
    return { errorType: typeof error, errorMessage: String(error), trace: [] };
  } catch {
    return {
      errorType: "handled",
      errorMessage:
        "callback called with Error argument, but there was a problem while retrieving one or more of its message, name, and stack",
    };
  }
}

function namedError(name, message, cause) {
  const error = new Error(message);
  error.name = name;
  if (cause && cause.stack) error.stack = `${name}: ${message}\n${String(cause.stack).split("\n").slice(1).join("\n")}`;
  return error;
}

// -- the log: console lines as Lambda writes them (time, request id, level, message) -------------------

let currentRequestId = undefined;
const levels = { log: "INFO", info: "INFO", warn: "WARN", error: "ERROR", debug: "DEBUG", trace: "TRACE" };
for (const [method, level] of Object.entries(levels)) {
  console[method] = (...args) => {
    const line = `${new RealDate().toISOString()}\t${currentRequestId ?? "undefined"}\t${level}\t${util.format(...args)}\n`;
    process.stdout.write(line);
  };
}

// -- the virtual clock: installed only when the harness sends an offset ----------------------------------

let offsetMs = 0;
let clockInstalled = false;
function setClockOffset(seconds) {
  offsetMs = seconds * 1000;
  if (clockInstalled) return;
  clockInstalled = true;
  class VirtualDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(realNow() + offsetMs);
      else super(...args);
    }
    static now() {
      return realNow() + offsetMs;
    }
  }
  globalThis.Date = VirtualDate;
}

// -- loading the handler, as Lambda's Node.js runtime (UserFunction.js) does -----------------------------

function packageTypeIsModule(folder) {
  if (folder.endsWith(`${path.sep}node_modules`)) return false;
  const manifest = path.join(folder, "package.json");
  if (fs.existsSync(manifest)) {
    try {
      return JSON.parse(fs.readFileSync(manifest, "utf8"))?.type === "module";
    } catch {
      return false;
    }
  }
  const parent = path.resolve(folder, "..");
  return parent === folder ? false : packageTypeIsModule(parent);
}

async function loadModule(root, moduleRoot, moduleName) {
  const base = path.resolve(root, moduleRoot, moduleName);
  if (fs.existsSync(base)) return require(base); // an extensionless file, or a folder with its index.js
  const jsIsModule = fs.existsSync(`${base}.js`) && packageTypeIsModule(path.dirname(`${base}.js`));
  if (!jsIsModule && fs.existsSync(`${base}.js`)) return require(`${base}.js`);
  if (jsIsModule) return await import(pathToFileURL(`${base}.js`).href);
  if (fs.existsSync(`${base}.mjs`)) return await import(pathToFileURL(`${base}.mjs`).href);
  if (fs.existsSync(`${base}.cjs`)) return require(`${base}.cjs`);
  return require(require.resolve(moduleName, { paths: [root, path.resolve(root, moduleRoot)] }));
}

async function loadHandler(root, fullHandler) {
  if (fullHandler.includes("..")) {
    throw namedError(
      "Runtime.MalformedHandlerName",
      `'${fullHandler}' is not a valid handler name. Use absolute paths when specifying root directories in handler names.`,
    );
  }
  const moduleAndHandler = path.basename(fullHandler);
  const moduleRoot = fullHandler.substring(0, fullHandler.indexOf(moduleAndHandler));
  const match = moduleAndHandler.match(/^([^.]*)\.(.*)$/);
  if (!match) throw namedError("Runtime.MalformedHandlerName", "Bad handler");
  const [, moduleName, handlerPath] = match;
  let loaded;
  try {
    loaded = await loadModule(root, moduleRoot, moduleName);
  } catch (error) {
    if (error instanceof SyntaxError) throw namedError("Runtime.UserCodeSyntaxError", `${error.name}: ${error.message}`, error);
    if (error?.code === "MODULE_NOT_FOUND" || error?.code === "ERR_MODULE_NOT_FOUND") {
      throw namedError("Runtime.ImportModuleError", `Error: ${error.message}`, error);
    }
    throw error;
  }
  const handler = handlerPath.split(".").reduce((nested, key) => nested && nested[key], loaded);
  if (!handler) throw namedError("Runtime.HandlerNotFound", `${fullHandler} is undefined or not exported`);
  if (typeof handler !== "function") throw namedError("Runtime.HandlerNotFound", `${fullHandler} is not a function`);
  return handler;
}

// -- one invocation ----------------------------------------------------------------------------------------

let inFlight = false; // an invocation is running: an uncaught error ends it

function invoke(handler, request) {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (answer) => {
      if (settled) return;
      settled = true;
      resolve(answer);
    };
    const succeed = (result) => settle({ result: result === undefined ? null : result });
    const fail = (error) => settle({ error: errorObject(error) });
    const callback = (error, result) => (error !== undefined && error !== null ? fail(error) : succeed(result));
    const env = process.env;
    const context = {
      callbackWaitsForEmptyEventLoop: true,
      functionName: env.AWS_LAMBDA_FUNCTION_NAME,
      functionVersion: env.AWS_LAMBDA_FUNCTION_VERSION,
      invokedFunctionArn: request.function_arn,
      memoryLimitInMB: env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
      awsRequestId: request.request_id,
      logGroupName: env.AWS_LAMBDA_LOG_GROUP_NAME,
      logStreamName: env.AWS_LAMBDA_LOG_STREAM_NAME,
      identity: undefined,
      clientContext: undefined,
      getRemainingTimeInMillis: () => Math.max(0, request.deadline_epoch_ms - realNow()),
      succeed,
      fail,
      done: callback,
    };
    let returned;
    try {
      returned = handler(request.event, context, callback);
    } catch (error) {
      fail(error);
      return;
    }
    if (returned && typeof returned.then === "function") {
      returned.then(succeed, fail);
    } else if (handler.length < 3) {
      // Neither a promise nor a callback to wait for: Lambda answers null once the event loop is empty; a warm
      // worker's loop never is (it reads stdin), so the answer comes after this turn of the loop.
      setImmediate(() => succeed(null));
    }
  });
}

// An error no invocation caught ends the one in flight and the environment, as in Lambda (exit 129 / 128).
function endEnvironment(error, code, label) {
  // "ending": the harness ends this worker before it would hand it another invocation.
  if (inFlight) send({ error: errorObject(error), ending: true });
  else console.error(label, errorObject(error));
  process.exit(code);
}
process.on("uncaughtException", (error) => endEnvironment(error, 129, "Uncaught Exception"));
process.on("unhandledRejection", (reason) => {
  const message = `${reason?.name ?? typeof reason}: ${reason?.message ?? String(reason)}`;
  endEnvironment(namedError("Runtime.UnhandledPromiseRejection", message, reason), 128, "Unhandled Promise Rejection");
});

// -- serve ---------------------------------------------------------------------------------------------------

process.chdir(codeDir);
let handler = null;
let initError = null;
try {
  handler = await loadHandler(codeDir, handlerString);
} catch (error) {
  initError = errorObject(error);
  console.error(`${initError.errorType}: ${initError.errorMessage}`);
}
send({ ready: true });

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  if (request.clock_offset_seconds !== null && request.clock_offset_seconds !== undefined) {
    setClockOffset(Number(request.clock_offset_seconds));
  }
  currentRequestId = request.request_id;
  inFlight = true;
  const answer = initError ? { error: initError } : await invoke(handler, request);
  inFlight = false;
  currentRequestId = undefined;
  send(answer);
}
