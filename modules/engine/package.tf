# The worker's zip is built by tools/build_lambda_package.py (standard library only) from a
# terraform_data local-exec, so no archive/null/external provider is needed. Plan never reads the
# zip: source_code_hash is a hash of the sources, which the builder turns into the same zip every time.

locals {
  source_dir        = coalesce(var.source_dir, "${path.module}/../../lambda_src")
  engine_dir        = "${local.source_dir}/stepwell"
  requirements_file = "${local.source_dir}/requirements.txt"
  builder_script    = "${path.module}/../../tools/build_lambda_package.py"
  excludes_file     = "${path.module}/../../tools/lambda_package_excludes.json"
  build_package     = var.lambda_package_path == null

  # The same selection the builder makes, from the same list: no test harness, no console, no bytecode.
  engine_excluded = jsondecode(file(local.excludes_file)).engine_excluded_top_level
  engine_files = sort([
    for file in fileset(local.engine_dir, "**") : file
    if !anytrue([for top in local.engine_excluded : startswith(file, "${top}/")]) &&
    !strcontains(file, "__pycache__") && !endswith(file, ".pyc")
  ])
  workflow_files = var.workflows_dir == null ? [] : sort([
    for file in fileset(var.workflows_dir, "**") : file
    if !strcontains(file, "__pycache__") && !endswith(file, ".pyc")
  ])

  # Top-level modules of workflows_dir: plain modules and packages.
  discovered_workflow_modules = sort(distinct(concat(
    [for file in local.workflow_files : "workflows.${trimsuffix(file, ".py")}" if length(regexall("^[A-Za-z_][A-Za-z0-9_]*\\.py$", file)) > 0],
    [for file in local.workflow_files : "workflows.${dirname(file)}" if length(regexall("^[A-Za-z_][A-Za-z0-9_]*/__init__\\.py$", file)) > 0],
  )))
  workflow_modules = var.workflow_modules != null ? var.workflow_modules : local.discovered_workflow_modules

  python_version = trimprefix(var.runtime, "python")
  pip_platform   = var.architecture == "arm64" ? "manylinux2014_aarch64" : "manylinux2014_x86_64"

  source_hash = local.build_package ? sha256(jsonencode({
    engine       = { for file in local.engine_files : file => filesha256("${local.engine_dir}/${file}") }
    workflows    = { for file in local.workflow_files : file => filesha256("${var.workflows_dir}/${file}") }
    requirements = filesha256(local.requirements_file)
    builder      = filesha256(local.builder_script)
    excludes     = filesha256(local.excludes_file)
    platform     = local.pip_platform
    python       = local.python_version
  })) : null

  package_path      = local.build_package ? "${var.package_build_dir}/${var.name}-worker.zip" : var.lambda_package_path
  package_code_hash = local.build_package ? base64encode(local.source_hash) : filebase64sha256(var.lambda_package_path)
}

resource "terraform_data" "package" {
  count = local.build_package ? 1 : 0

  triggers_replace = local.source_hash

  provisioner "local-exec" {
    # Arguments travel as environment variables: no shell quoting of paths.
    interpreter = [var.python_executable]
    command     = local.builder_script
    environment = {
      STEPWELL_BUILD_OUTPUT         = local.package_path
      STEPWELL_BUILD_ENGINE_DIR     = local.engine_dir
      STEPWELL_BUILD_REQUIREMENTS   = local.requirements_file
      STEPWELL_BUILD_WORKFLOWS_DIR  = var.workflows_dir == null ? "" : var.workflows_dir
      STEPWELL_BUILD_PLATFORM       = local.pip_platform
      STEPWELL_BUILD_PYTHON_VERSION = local.python_version
    }
  }
}
