"""Fills a moto server for batchdl's S3 tests: an IAM user allowed everything, its access key, a
bucket with objects and, when asked, STS session credentials (an assumed role's).

Reads one JSON object on standard input:
  {"endpoint": "http://127.0.0.1:PORT", "region": "us-east-1", "bucket": "NAME",
   "objects": [{"key": "a/b.txt", "body": "BASE64"}, ...], "session": true}
and writes one JSON object on standard output:
  {"access_key": ..., "secret_key": ..., "session_token": ... or null}

The server must take the first three calls without authentication (INITIAL_NO_AUTH_ACTION_COUNT=3):
they make the user, its policy and its key; every later call is signed with that key. The objects
are put from one process over a few connections, so that thousands take seconds.
"""

import base64
import json
import sys
from concurrent.futures import ThreadPoolExecutor

import boto3
from botocore.config import Config


def main():
    spec = json.load(sys.stdin)
    endpoint = spec["endpoint"]
    region = spec.get("region", "us-east-1")
    config = Config(retries={"max_attempts": 2}, max_pool_connections=8)
    anonymous = {"aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
    iam = boto3.client("iam", endpoint_url=endpoint, region_name=region, config=config, **anonymous)
    everything = json.dumps(
        {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}
    )
    iam.create_user(UserName="batchdl")
    iam.put_user_policy(
        UserName="batchdl",
        PolicyName="everything",
        PolicyDocument=everything,
    )
    key = iam.create_access_key(UserName="batchdl")["AccessKey"]
    signed = {"aws_access_key_id": key["AccessKeyId"], "aws_secret_access_key": key["SecretAccessKey"]}
    s3 = boto3.client("s3", endpoint_url=endpoint, region_name=region, config=config, **signed)
    bucket = spec["bucket"]
    if region == "us-east-1":
        s3.create_bucket(Bucket=bucket)
    else:
        s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": region})

    def put(item):
        s3.put_object(Bucket=bucket, Key=item["key"], Body=base64.b64decode(item["body"]))

    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in pool.map(put, spec.get("objects", [])):
            pass
    result = {"access_key": key["AccessKeyId"], "secret_key": key["SecretAccessKey"], "session_token": None}
    if spec.get("session"):
        # moto checks the session token of an assumed role's key (ASIA...); the keys of its
        # get_session_token are fixed examples that its IAM authentication does not know.
        signed_iam = boto3.client("iam", endpoint_url=endpoint, region_name=region, config=config, **signed)
        trust = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}],
        }
        role = signed_iam.create_role(RoleName="batchdl-reader", AssumeRolePolicyDocument=json.dumps(trust))
        signed_iam.put_role_policy(RoleName="batchdl-reader", PolicyName="everything", PolicyDocument=everything)
        sts = boto3.client("sts", endpoint_url=endpoint, region_name=region, config=config, **signed)
        credentials = sts.assume_role(RoleArn=role["Role"]["Arn"], RoleSessionName="batchdl-test")["Credentials"]
        result = {
            "access_key": credentials["AccessKeyId"],
            "secret_key": credentials["SecretAccessKey"],
            "session_token": credentials["SessionToken"],
        }
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
