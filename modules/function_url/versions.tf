terraform {
  # The root module's, as in every module and example (tests/terraform/test_required_version.py).
  required_version = ">= 1.9"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.80, < 7"
    }
    # terraform_data is built in: the package is built without archive/null providers.
  }
}
