terraform {
  # The root module's, as in every module and example (tests/terraform/test_required_version.py).
  required_version = ">= 1.9"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.80, < 7"
    }
  }
}
